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
local incomplete_key = KEYS[1]
local out = {}
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
    for i = first, last, 5000 do
      redis.call('SADD', emitted_key, unpack(ARGV, i, math.min(i + 4999, last)))
    end
    local missing = tonumber(info[1] or '0') - redis.call('SCARD', emitted_key)
    if missing <= 0 then
      redis.call('HSET', round_key, 'emitted', '1')
      redis.call('DEL', emitted_key)
      redis.call('ZREM', incomplete_key, info[2])
      out[k] = 0
    else
      out[k] = missing
    end
  end
end
return out
