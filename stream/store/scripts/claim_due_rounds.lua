-- claim_due_rounds: the sweeper claims rounds of one ladder that are past their due time.
-- Atomic claim: a claimed round's due time moves ahead, so several workers sweeping at once re-drive
-- each round once per period. The period doubles with each re-drive of the round (counted in its
-- record's `redrives`): after the k-th re-drive the next is due ARGV[2] * 2^min(k - 1, ARGV[3]) later. A round late because the service is
-- saturated (its messages still queued, not lost) is then re-sent a few times, not every period:
-- re-sends add work exactly when there is too much. A round is in the ledger until its events
-- were all emitted (confirm_emitted.lua), so "rated" rounds are claimed too; unknown ones leave it.
-- One slot: keys of ladder {L}.
-- KEYS[1] incomplete rounds      ems:incomplete:{L}
-- KEYS[1 + i] round record       ems:round:{L}:R_i  (candidates, from ZRANGEBYSCORE)
-- ARGV[1] now                    epoch seconds
-- ARGV[2] period                 seconds to the next re-drive after the first one (SWEEP_TIMEOUT_S)
-- ARGV[3] max_doublings          cap of the period's doublings (SWEEP_BACKOFF_DOUBLINGS)
-- ARGV[3 + i] round id R_i
-- A claimed "pending" round records its pending count (swept_pending); it is "progressing" when
-- fewer players are pending than at its previous claim (or, at its first, than its field size):
-- its messages are being applied, so the sweeper does not re-send its whole fan-out this time.
-- Returns a flat list: round id, status, seq, progressing (1 or 0) for each claimed round.
local incomplete_key = KEYS[1]
local now, period, max_doublings = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {}
for i = 2, #KEYS do
  local round_id = ARGV[i + 2]
  local due = redis.call('ZSCORE', incomplete_key, round_id)
  if due and tonumber(due) <= now then
    local info = redis.call('HMGET', KEYS[i], 'status', 'seq', 'pending', 'swept_pending', 'field_size')
    if info[1] == 'registered' or info[1] == 'pending' or info[1] == 'rated' then
      local redrives = redis.call('HINCRBY', KEYS[i], 'redrives', 1)
      local next_due = now + period * 2 ^ math.min(redrives - 1, max_doublings)
      redis.call('ZADD', incomplete_key, string.format('%.17g', next_due), round_id)
      local progressing = 0
      if info[1] == 'pending' and info[3] then
        local before = tonumber(info[4] or info[5] or '0')
        if tonumber(info[3]) < before then
          progressing = 1
        end
        redis.call('HSET', KEYS[i], 'swept_pending', info[3])
      end
      out[#out + 1] = round_id
      out[#out + 1] = info[1]
      out[#out + 1] = info[2]
      out[#out + 1] = progressing
    else
      redis.call('ZREM', incomplete_key, round_id)
    end
  end
end
return out
