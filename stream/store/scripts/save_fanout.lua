-- save_fanout: store phase one's output of a round and mark it pending, once.
-- After this, a redelivered round re-sends exactly these messages instead of recomputing.
-- One slot: keys of ladder {L}.
-- KEYS[1] round record           ems:round:{L}:R
-- KEYS[2] stored fan-out (hash)  ems:round-perf:{L}:R
-- ARGV[1] pending                players awaiting their update (= field size)
-- ARGV[2..] partition, PlayerUpdate JSON, partition, PlayerUpdate JSON, ...
-- Returns 1 if stored now, 0 if the round was already past "registered" (nothing written).
local round_key, perf_key = KEYS[1], KEYS[2]
local status = redis.call('HGET', round_key, 'status')
if status ~= 'registered' then
  return 0
end
redis.call('DEL', perf_key)
for i = 2, #ARGV, 2 do
  redis.call('HSET', perf_key, ARGV[i], ARGV[i + 1])
end
redis.call('HSET', round_key, 'status', 'pending', 'pending', ARGV[1])
return 1
