-- finish_correction: record a correction in the ladder's ledger and release its hold, at once.
-- One slot: keys of ladder {L}.
-- KEYS[1] ladder hash            ems:ladder:{L}
-- KEYS[2] corrections ledger     ems:corrections:{L}  (correction id -> JSON)
-- KEYS[3] correction plan        ems:correction-plan:{L}:C (deleted)
-- ARGV[1] correction id
-- ARGV[2] ledger entry (JSON); "" records nothing (a correction set aside only releases its hold)
-- ARGV[3] "1" if the ladder's ratings were re-rated (its "corrections" counter moves: phase one's
--         cached posteriors of the ladder are stale)
-- Returns 1 if the hold was this correction's (released now), 0 otherwise (nothing released).
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
end
redis.call('DEL', KEYS[3])
if ARGV[3] == '1' then
  redis.call('HINCRBY', KEYS[1], 'corrections', 1)
end
if redis.call('HGET', KEYS[1], 'hold') == ARGV[1] then
  redis.call('HDEL', KEYS[1], 'hold', 'hold_since')
  return 1
end
return 0
