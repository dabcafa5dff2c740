-- hold_ladder: a correction holds its ladder (register_round.lua registers nothing while it does).
-- One slot: keys of ladder {L}.
-- KEYS[1] ladder hash            ems:ladder:{L}
-- ARGV[1] correction id
-- ARGV[2] now                    epoch seconds (hold_since)
-- Returns the id holding the ladder: ARGV[1] if it holds it now (or already did: a redelivered
-- correction resumes), another id if another correction holds it.
local holder = redis.call('HGET', KEYS[1], 'hold')
if holder then
  return holder
end
redis.call('HSET', KEYS[1], 'hold', ARGV[1], 'hold_since', ARGV[2])
return ARGV[1]
