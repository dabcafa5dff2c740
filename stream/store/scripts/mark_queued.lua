-- mark_queued: record that round seq is queued for each player (the per-player barrier).
-- One key per call on Redis Cluster, many on a single Redis.
-- KEYS[i]  player hash  ems:player:{L|P}
-- ARGV[1]  seq
for i = 1, #KEYS do
  redis.call('HSET', KEYS[i], 'queued_seq', ARGV[1])
end
return #KEYS
