-- read_rounds: record fields and stored fan-outs of many rounds of one ladder in one reply (a
-- correction's re-rate reads the whole ladder: a reply per command cost more than the reading).
-- One slot: keys of ladder {L}.
-- KEYS[2i-1] round record        ems:round:{L}:R
-- KEYS[2i]   stored fan-out      ems:round-perf:{L}:R
-- ARGV[1..]  record fields to read
-- Returns, per round: the fields' values (false where absent), the number of fan-out messages,
-- then the messages ordered by field name (partition, then part).
local out = {}
for i = 1, #KEYS / 2 do
  local values = redis.call('HMGET', KEYS[2 * i - 1], unpack(ARGV))
  for j = 1, #ARGV do
    out[#out + 1] = values[j]
  end
  local flat = redis.call('HGETALL', KEYS[2 * i])
  local n = #flat / 2
  out[#out + 1] = n
  if n == 1 then
    out[#out + 1] = flat[2]
  elseif n == 2 and not string.find(flat[1], '.', 1, true) and not string.find(flat[3], '.', 1, true) then
    -- two partitions' messages, none split (the common case of a duel): no table to sort
    if tonumber(flat[1]) < tonumber(flat[3]) then
      out[#out + 1] = flat[2]
      out[#out + 1] = flat[4]
    else
      out[#out + 1] = flat[4]
      out[#out + 1] = flat[2]
    end
  elseif n > 0 then
    local parts = {}
    for j = 1, #flat, 2 do
      local dot = string.find(flat[j], '.', 1, true)
      local partition = tonumber(dot and string.sub(flat[j], 1, dot - 1) or flat[j])
      local part = dot and tonumber(string.sub(flat[j], dot + 1)) or 0
      parts[#parts + 1] = {partition, part, flat[j + 1]}
    end
    table.sort(parts, function(a, b) return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2]) end)
    for _, p in ipairs(parts) do
      out[#out + 1] = p[3]
    end
  end
end
return out
