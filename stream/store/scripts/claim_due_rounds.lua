-- claim_due_rounds: the sweeper claims rounds of one ladder that are past their due time.
-- Atomic claim: a claimed round's due time moves to ARGV[2], so several workers sweeping at once
-- re-drive each round once per SWEEP_TIMEOUT_S. A round is in the ledger until its events were
-- all emitted (confirm_emitted.lua), so "rated" rounds are claimed too; unknown ones leave it.
-- One slot: keys of ladder {L}.
-- KEYS[1] incomplete rounds      ems:incomplete:{L}
-- KEYS[1 + i] round record       ems:round:{L}:R_i  (candidates, from ZRANGEBYSCORE)
-- ARGV[1] now                    epoch seconds
-- ARGV[2] next_due               due time of a claimed round (now + SWEEP_TIMEOUT_S)
-- ARGV[2 + i] round id R_i
-- Returns a flat list: round id, status, seq for each claimed round.
local incomplete_key = KEYS[1]
local now = tonumber(ARGV[1])
local out = {}
for i = 2, #KEYS do
  local round_id = ARGV[i + 1]
  local due = redis.call('ZSCORE', incomplete_key, round_id)
  if due and tonumber(due) <= now then
    local info = redis.call('HMGET', KEYS[i], 'status', 'seq')
    if info[1] == 'registered' or info[1] == 'pending' or info[1] == 'rated' then
      redis.call('ZADD', incomplete_key, ARGV[2], round_id)
      out[#out + 1] = round_id
      out[#out + 1] = info[1]
      out[#out + 1] = info[2]
    else
      redis.call('ZREM', incomplete_key, round_id)
    end
  end
end
return out
