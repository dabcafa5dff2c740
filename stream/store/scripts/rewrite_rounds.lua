-- rewrite_rounds: a correction's re-rated rounds, many per call (one reply instead of a few per
-- round): each round's record marked rerated_by the correction, its results and stored fan-out
-- replaced, its fan-out digest set dropped (rebuilt from the new fan-out on phase two's next check).
-- The mark and the new results are written together: phase two, which reads a round's results and
-- then its mark to decide whether to re-emit them, never re-emits re-rated results.
-- One slot: keys of ladder {L}.
-- KEYS[4i-3..4i]  round record, round results, stored fan-out, fan-out digests of round i
-- ARGV[1]         the correction id
-- then per round: m results fields, m player, RatingChange pairs (m = 0: no results kept: retention),
--                 f fan-out fields, f partition, PlayerUpdate pairs
-- Returns the number of rounds rewritten.
local CHUNK = 1000
local a = 2

local function replace(key)
  redis.call('DEL', key)
  local m = tonumber(ARGV[a])
  a = a + 1
  for first = 0, m - 1, CHUNK do
    local last = math.min(first + CHUNK, m) - 1
    redis.call('HSET', key, unpack(ARGV, a + 2 * first, a + 2 * last + 1))
  end
  a = a + 2 * m
end

for i = 1, #KEYS / 4 do
  redis.call('HSET', KEYS[4 * i - 3], 'rerated_by', ARGV[1])
  replace(KEYS[4 * i - 2])
  replace(KEYS[4 * i - 1])
  redis.call('DEL', KEYS[4 * i])
end
return #KEYS / 4
