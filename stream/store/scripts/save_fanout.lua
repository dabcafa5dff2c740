-- save_fanout: store phase one's output of a round and mark it pending, once, in seq order, and
-- only from a chain of computations that won.
-- After this, a redelivered round re-sends exactly these messages instead of recomputing.
-- Refused (nothing written) while a round of the ladder with a smaller seq is still "registered":
-- a fan-out is computed from its players' priors, which are final only once every earlier round
-- of the ladder is stored (its players marked queued: the barrier waits for them), whichever
-- attempt (a batch, a redelivery, the sweeper) gets here first.
-- Fenced (nothing written) when ARGV[4], the fencing token of the writer's lease on the ladder
-- (acquire_lease.lua), is below the ladder's fence: its lease lapsed and another attempt took it
-- (a zombie after a rebalance, a worker paused past its lease): that attempt rates the round.
-- With KEYS[6] (a batch: the attempt's previous round of the same ladder, from whose posteriors
-- this round may have been rated), refused unless that round was stored by this attempt (its
-- "stored_by" is ARGV[3]): once a round of the batch was stored by another attempt, the batch's
-- later rounds of the ladder were computed from a chain that lost and are never stored.
-- One slot: keys of ladder {L}.
-- KEYS[1] round record           ems:round:{L}:R
-- KEYS[2] stored fan-out (hash)  ems:round-perf:{L}:R
-- KEYS[3] registered rounds      ems:registered:{L}  (the round leaves it; scores: seq)
-- KEYS[4] incomplete rounds      ems:incomplete:{L}  (re-armed: due again at ARGV[2])
-- KEYS[5] fence (hash)           ems:fence:{L}       (its "token": acquire_lease.lua)
-- KEYS[6] (optional) previous round of the attempt's chain  ems:round:{L}:Q
-- ARGV[1] pending                players awaiting their update (= field size)
-- ARGV[2] due_at                 when the sweeper may re-send the fan-out ("+inf": never)
-- ARGV[3] attempt token          recorded as the round's "stored_by" ("" = none)
-- ARGV[4] fencing token          the writer's lease token ("" = not fenced: a writer without a lease)
-- ARGV[5..] partition, PlayerUpdate JSON, partition, PlayerUpdate JSON, ...
-- Returns 1 if stored now; 0 if the round was already past "registered" (another attempt stored
-- it, or it failed); -1 if refused (an earlier round still registered, or the chain lost); -2 if
-- fenced (checked first: a fenced writer sends nothing, not even another attempt's fan-out).
if ARGV[4] ~= '' and tonumber(redis.call('HGET', KEYS[5], 'token') or '0') > tonumber(ARGV[4]) then
  return -2
end
local round_key, perf_key, registered_key, incomplete_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local info = redis.call('HMGET', round_key, 'status', 'round_id', 'seq')
if info[1] ~= 'registered' then
  return 0
end
if KEYS[6] and redis.call('HGET', KEYS[6], 'stored_by') ~= ARGV[3] then
  return -1
end
if #redis.call('ZRANGEBYSCORE', registered_key, '-inf', '(' .. info[3], 'LIMIT', 0, 1) > 0 then
  return -1
end
redis.call('DEL', perf_key)
for i = 5, #ARGV, 2000 do  -- one HSET per 1,000 messages (Lua's unpack limit)
  redis.call('HSET', perf_key, unpack(ARGV, i, math.min(i + 1999, #ARGV)))
end
redis.call('HSET', round_key, 'status', 'pending', 'pending', ARGV[1])
if ARGV[3] ~= '' then
  redis.call('HSET', round_key, 'stored_by', ARGV[3])
end
redis.call('HDEL', round_key, 'body')
redis.call('ZREM', registered_key, info[2])
redis.call('ZADD', incomplete_key, ARGV[2], info[2])
return 1
