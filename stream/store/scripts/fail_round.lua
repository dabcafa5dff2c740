-- fail_round: set aside a round whose phase one, or the phase two of one of its fan-out messages,
-- kept raising (dead-lettered as internal_error).
-- The round leaves the registered set and the sweeper's ledger and keeps status "failed": a later
-- round of the ladder no longer completes it first, the sweeper no longer re-drives it, and a
-- re-published copy is a duplicate (nothing happens). Only a round still "registered" with this
-- content is failed: one whose fan-out is stored is on its way and is left alone; with ARGV[3]
-- "pending", a round still "pending" with seq ARGV[1] (phase two gave up on part of its fan-out:
-- the players it reached are rated, the others keep their state and are released).
-- One slot: keys of ladder {L}.
-- KEYS[1] round record           ems:round:{L}:R
-- KEYS[2] registered rounds      ems:registered:{L}
-- KEYS[3] incomplete rounds      ems:incomplete:{L}
-- ARGV[1] content_hash           of the round being failed (its seq with ARGV[3] "pending")
-- ARGV[2] reason                 why (stored as failed_reason)
-- ARGV[3] status                 the status it must have: "registered" (default) or "pending"
-- Returns the round's seq if it was failed now, 0 otherwise.
local round_key, registered_key, incomplete_key = KEYS[1], KEYS[2], KEYS[3]
local info = redis.call('HMGET', round_key, 'status', 'content_hash', 'round_id', 'seq')
local want = ARGV[3] or 'registered'
if info[1] ~= want or (want == 'registered' and info[2] ~= ARGV[1]) or (want == 'pending' and info[4] ~= ARGV[1]) then
  return 0
end
redis.call('HSET', round_key, 'status', 'failed', 'failed_reason', ARGV[2])
redis.call('HDEL', round_key, 'body')
redis.call('ZREM', registered_key, info[3])
redis.call('ZREM', incomplete_key, info[3])
return tonumber(info[4])
