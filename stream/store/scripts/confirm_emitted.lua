-- confirm_emitted: record that players' RatingChange events of some rounds of one ladder reached
-- Kafka; once every player's of a round did, the round leaves the sweeper's ledger (until then the
-- sweeper re-sends its stored fan-out, and phase two re-emits the events from the stored results).
-- One slot: keys of ladder {L}. Several rounds per call (a phase-two batch of duels confirms tens
-- of rounds: one call, not one per round); segments handled in order (a round may come twice).
-- KEYS[1] incomplete rounds                    ems:incomplete:{L}
-- then per segment k: KEYS[2k] round record    ems:round:{L}:R
--                     KEYS[2k+1] emitted set   ems:emitted:{L}:R
-- ARGV per segment: n, then the n players whose events were acknowledged by the broker
-- Returns, per segment, the number of its round's players whose events are still unconfirmed.
-- A segment naming as many distinct players as the round has (a small round confirmed at once)
-- completes it without going through the emitted set (only an earlier partial one is deleted).
local incomplete_key = KEYS[1]
local out = {}
local done = {}   -- round ids leaving the ledger (one ZREM at the end)
local at = 1
for k = 1, (#KEYS - 1) / 2 do
  local round_key, emitted_key = KEYS[2 * k], KEYS[2 * k + 1]
  local n = tonumber(ARGV[at])
  local first, last = at + 1, at + n
  at = last + 1
  local info = redis.call('HMGET', round_key, 'field_size', 'round_id', 'emitted')
  if info[3] == '1' then
    out[k] = 0
  else
    local field_size = tonumber(info[1] or '0')
    local missing
    if n >= field_size then
      local distinct, seen = 0, {}
      for i = first, last do
        if not seen[ARGV[i]] then
          seen[ARGV[i]] = true
          distinct = distinct + 1
        end
      end
      if distinct >= field_size then
        missing = 0
      end
    end
    if not missing then
      for i = first, last, 5000 do
        redis.call('SADD', emitted_key, unpack(ARGV, i, math.min(i + 4999, last)))
      end
      missing = field_size - redis.call('SCARD', emitted_key)
    end
    if missing <= 0 then
      redis.call('HSET', round_key, 'emitted', '1')
      redis.call('DEL', emitted_key)
      done[#done + 1] = info[2]
      out[k] = 0
    else
      out[k] = missing
    end
  end
end
for i = 1, #done, 5000 do
  redis.call('ZREM', incomplete_key, unpack(done, i, math.min(i + 4999, #done)))
end
return out
