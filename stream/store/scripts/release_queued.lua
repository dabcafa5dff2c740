-- release_queued: a failed round (fail_round.lua) rates nobody; players it already marked queued
-- (a phase one that raised between mark_queued and save_fanout) are released for the barrier of
-- later rounds: last_seq moves up to the failed round's seq, their state is unchanged.
-- Only a player whose queued_seq is this very round is touched (every earlier round of theirs was
-- applied before this round's barrier let it mark them).
-- One key per call on Redis Cluster, many on a single Redis.
-- KEYS[i]  player hash  ems:player:{L|P}
-- ARGV[1]  seq of the failed round
-- Returns how many players were released.
local seq = tonumber(ARGV[1])
local released = 0
for i = 1, #KEYS do
  local info = redis.call('HMGET', KEYS[i], 'queued_seq', 'last_seq')
  if tonumber(info[1] or '0') == seq and tonumber(info[2] or '0') < seq then
    redis.call('HSET', KEYS[i], 'last_seq', ARGV[1])
    released = released + 1
  end
end
return released
