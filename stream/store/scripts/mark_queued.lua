-- mark_queued: record that round seq is queued for each player (the per-player barrier).
-- Monotonic: queued_seq never goes down (a late re-drive of an earlier round, racing the
-- ladder's phase one that already queued a later round, must not lower it and open the barrier).
-- One key per call on Redis Cluster, many on a single Redis.
-- KEYS[i]  player hash  ems:player:{L|P}
-- ARGV[1]  seq
local seq = tonumber(ARGV[1])
for i = 1, #KEYS do
  local queued = tonumber(redis.call('HGET', KEYS[i], 'queued_seq') or '0')
  if seq > queued then
    redis.call('HSET', KEYS[i], 'queued_seq', ARGV[1])
  end
end
return #KEYS
