-- save_fanout: store phase one's output of a round and mark it pending, once.
-- After this, a redelivered round re-sends exactly these messages instead of recomputing.
-- One slot: keys of ladder {L}.
-- KEYS[1] round record           ems:round:{L}:R
-- KEYS[2] stored fan-out (hash)  ems:round-perf:{L}:R
-- KEYS[3] registered rounds      ems:registered:{L}  (the round leaves it)
-- KEYS[4] incomplete rounds      ems:incomplete:{L}  (re-armed: due again at ARGV[2])
-- ARGV[1] pending                players awaiting their update (= field size)
-- ARGV[2] due_at                 when the sweeper may re-send the fan-out ("+inf": never)
-- ARGV[3..] partition, PlayerUpdate JSON, partition, PlayerUpdate JSON, ...
-- Returns 1 if stored now, 0 if the round was already past "registered" (nothing written).
local round_key, perf_key, registered_key, incomplete_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local info = redis.call('HMGET', round_key, 'status', 'round_id')
if info[1] ~= 'registered' then
  return 0
end
redis.call('DEL', perf_key)
for i = 3, #ARGV, 2000 do  -- one HSET per 1,000 messages (Lua's unpack limit)
  redis.call('HSET', perf_key, unpack(ARGV, i, math.min(i + 1999, #ARGV)))
end
redis.call('HSET', round_key, 'status', 'pending', 'pending', ARGV[1])
redis.call('HDEL', round_key, 'body')
redis.call('ZREM', registered_key, info[2])
redis.call('ZADD', incomplete_key, ARGV[2], info[2])
return 1
