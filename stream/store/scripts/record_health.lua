-- record_health.lua: add a ladder's scored rounds to its rating health (stream/store/health.py).
-- KEYS[1] health hash, KEYS[2] window list, KEYS[3] climbers list (one ladder: one slot)
-- ARGV[1] window (rounds kept), ARGV[2] climber events kept, ARGV[3] K (summed fields),
-- ARGV[4 .. 3+K] field names, then R (rounds), then per round: seq, entry ("v1,...,vK,median");
-- then C (climber events) and C JSON texts (each "seq|json": recorded when its round is).
-- Rounds at or below the hash's last_seq are skipped (a retried or redelivered round counts once).
-- Returns the number of rounds recorded.
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
local cum, roll = {}, {}
for i = 1, k do
  cum[i] = tonumber(stored[2 * i - 1]) or 0
  roll[i] = tonumber(stored[2 * i]) or 0
end
local last = tonumber(stored[2 * k + 1]) or -1
local at = 4 + k
local n_rounds = tonumber(ARGV[at])
at = at + 1
local recorded = 0
local first_new = nil
for r = 1, n_rounds do
  local seq = tonumber(ARGV[at])
  local entry = ARGV[at + 1]
  at = at + 2
  if seq > last then
    if first_new == nil then first_new = seq end
    local i = 0
    for value in string.gmatch(entry, '[^,]+') do
      i = i + 1
      if i > k then break end
      local v = tonumber(value)
      cum[i] = cum[i] + v
      roll[i] = roll[i] + v
    end
    redis.call('LPUSH', KEYS[2], seq .. ',' .. entry)
    if redis.call('LLEN', KEYS[2]) > window then
      local old = redis.call('RPOP', KEYS[2])
      local j = 0  -- the first value is the seq
      for value in string.gmatch(old, '[^,]+') do
        if j >= 1 and j <= k then roll[j] = roll[j] - tonumber(value) end
        j = j + 1
      end
    end
    last = seq
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
