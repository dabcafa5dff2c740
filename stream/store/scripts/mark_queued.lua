-- mark_queued: record that round seq is queued for each player (the per-player barrier).
-- Monotonic: queued_seq never goes down (a late re-drive of an earlier round, racing the
-- ladder's phase one that already queued a later round, must not lower it and open the barrier).
-- queued_prev: the queued_seq replaced while that round was not applied yet (last_seq below it),
-- else removed. Phase one marks a batch's rounds before any of them is applied (it rates the
-- batch's later rounds from the posteriors it computed), so a worker killed mid-batch can leave a
-- player marked for a round still to rate whose previous round is not applied: that round's next
-- attempt waits for queued_prev (Store._priors), not only for queued_seq.
-- One key per call on Redis Cluster, many on a single Redis.
-- KEYS[i]  player hash  ems:player:{L|P}
-- ARGV[1]  seq
local seq = tonumber(ARGV[1])
for i = 1, #KEYS do
  local info = redis.call('HMGET', KEYS[i], 'queued_seq', 'last_seq', 'queued_prev')
  local queued = tonumber(info[1] or '0')
  if seq > queued then
    if queued > tonumber(info[2] or '0') then
      redis.call('HSET', KEYS[i], 'queued_seq', ARGV[1], 'queued_prev', info[1])
    else
      redis.call('HSET', KEYS[i], 'queued_seq', ARGV[1])
      if info[3] then
        redis.call('HDEL', KEYS[i], 'queued_prev')
      end
    end
  end
end
return #KEYS
