-- record_health.lua: add a ladder's scored rounds to its rating health (stream/store/health.py).
-- KEYS[1] health hash, KEYS[2] window list, KEYS[3] climbers list (one ladder: one slot)
-- ARGV[1] window (rounds kept), ARGV[2] climber events kept, ARGV[3] K (summed fields),
-- ARGV[4 .. 3+K] field names, then N (chunks), then per chunk: first seq, last seq, entry
-- ("v1,...,vK,median": the sums over the chunk's rounds); then C and C climber events ("seq|json").
-- A chunk at or below the hash's last_seq is skipped (a retried or redelivered batch counts once);
-- a chunk straddling it changes nothing and the script returns -1 (the caller sends its rounds one
-- chunk each). The window keeps the newest entries holding at least ARGV[1] rounds.
-- Returns the number of chunks recorded, or -1.
local window = tonumber(ARGV[1])
local keep_climbers = tonumber(ARGV[2])
local k = tonumber(ARGV[3])
local names = {}
local fields = {}
for i = 1, k do
  names[i] = ARGV[3 + i]
  fields[2 * i - 1] = 'c:' .. names[i]
  fields[2 * i] = 'r:' .. names[i]
end
fields[2 * k + 1] = 'last_seq'
local stored = redis.call('HMGET', KEYS[1], unpack(fields))
local last = tonumber(stored[2 * k + 1]) or -1
local at = 4 + k
local n_chunks = tonumber(ARGV[at])
for c = 0, n_chunks - 1 do
  local first, final = tonumber(ARGV[at + 1 + 3 * c]), tonumber(ARGV[at + 2 + 3 * c])
  if first <= last and final > last then return -1 end
end
local cum, roll = {}, {}
for i = 1, k do
  cum[i] = tonumber(stored[2 * i - 1]) or 0
  roll[i] = tonumber(stored[2 * i]) or 0
end
local function values(entry, skip)
  local out, j = {}, 0
  for value in string.gmatch(entry, '[^,]+') do
    j = j + 1
    if j > skip and j <= skip + k then out[j - skip] = tonumber(value) end
  end
  return out
end
local first_new = nil
local recorded = 0
at = at + 1
for c = 1, n_chunks do
  local first, final, entry = tonumber(ARGV[at]), tonumber(ARGV[at + 1]), ARGV[at + 2]
  at = at + 3
  if first > last then
    if first_new == nil then first_new = first end
    local v = values(entry, 0)
    for i = 1, k do
      cum[i] = cum[i] + v[i]
      roll[i] = roll[i] + v[i]
    end
    redis.call('LPUSH', KEYS[2], first .. ',' .. final .. ',' .. entry)
    while true do  -- drop the oldest entry while the rest still holds the window
      local oldest = redis.call('LINDEX', KEYS[2], -1)
      if not oldest or redis.call('LLEN', KEYS[2]) <= 1 then break end
      local o = values(oldest, 2)
      if roll[1] - o[1] < window then break end
      for i = 1, k do roll[i] = roll[i] - o[i] end
      redis.call('RPOP', KEYS[2])
    end
    last = final
    recorded = recorded + 1
  end
end
local n_climbers = tonumber(ARGV[at])
at = at + 1
for c = 1, n_climbers do
  local text = ARGV[at]
  at = at + 1
  local bar = string.find(text, '|', 1, true)
  local seq = tonumber(string.sub(text, 1, bar - 1))
  if first_new ~= nil and seq >= first_new then
    redis.call('LPUSH', KEYS[3], string.sub(text, bar + 1))
  end
end
if n_climbers > 0 then redis.call('LTRIM', KEYS[3], 0, keep_climbers - 1) end
if recorded > 0 then
  local out = {}
  for i = 1, k do
    out[#out + 1] = 'c:' .. names[i]
    out[#out + 1] = string.format('%.17g', cum[i])
    out[#out + 1] = 'r:' .. names[i]
    out[#out + 1] = string.format('%.17g', roll[i])
  end
  out[#out + 1] = 'last_seq'
  out[#out + 1] = tostring(last)
  redis.call('HSET', KEYS[1], unpack(out))
end
return recorded
