-- release_queued: a failed round rates nobody (fail_round.lua: its phase one kept raising), or not
-- some of its players (phase two dead-lettered a section of its fan-out). Players it marked queued
-- are released: last_seq moves up to the failed round's seq, their state unchanged, so the round
-- counts as skipped for them: the barrier of the ladder's later rounds lets them through, and phase
-- two applies a later round whose previous_seq names the failed round (else a gap forever).
-- Only a player the round marked (queued_seq at or past it: a later round of the same phase-one
-- batch may have marked them since) and not yet past it (last_seq below it) is touched.
-- One key per call on Redis Cluster, many on a single Redis.
-- KEYS[i]  player hash  ems:player:{L|P}
-- ARGV[1]  seq of the failed round
-- Returns how many players were released.
local seq = tonumber(ARGV[1])
local released = 0
for i = 1, #KEYS do
  local info = redis.call('HMGET', KEYS[i], 'queued_seq', 'last_seq')
  if tonumber(info[1] or '0') >= seq and tonumber(info[2] or '0') < seq then
    redis.call('HSET', KEYS[i], 'last_seq', ARGV[1])
    released = released + 1
  end
end
return released
