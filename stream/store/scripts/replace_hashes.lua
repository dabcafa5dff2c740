-- replace_hashes: replace whole hashes (a correction's re-rated round results and fan-outs), many
-- per call (one reply instead of a few per round).
-- One slot: keys of ladder {L}.
-- KEYS[1..n]  the hashes to replace
-- ARGV[1]     n
-- then per hash: its number of fields m, then m field, value pairs (m = 0: the hash is deleted)
-- Returns the number of hashes written.
local CHUNK = 1000
local n = tonumber(ARGV[1])
local a = 2
local written = 0
for i = 1, n do
  redis.call('DEL', KEYS[i])
  local m = tonumber(ARGV[a])
  a = a + 1
  for first = 0, m - 1, CHUNK do
    local last = math.min(first + CHUNK, m) - 1
    redis.call('HSET', KEYS[i], unpack(ARGV, a + 2 * first, a + 2 * last + 1))
  end
  if m > 0 then written = written + 1 end
  a = a + 2 * m
end
return written
