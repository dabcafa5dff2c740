-- confirm_emitted: record that players' RatingChange events of a round reached Kafka; once every
-- player's did, the round leaves the sweeper's ledger (until then the sweeper re-sends its stored
-- fan-out, and phase two re-emits the events from the stored results).
-- One slot: keys of ladder {L}.
-- KEYS[1] round record           ems:round:{L}:R
-- KEYS[2] emitted players (set)  ems:emitted:{L}:R
-- KEYS[3] incomplete rounds      ems:incomplete:{L}
-- ARGV[1..] players whose events were acknowledged by the broker
-- Returns the number of players whose events are still unconfirmed.
local round_key, emitted_key, incomplete_key = KEYS[1], KEYS[2], KEYS[3]
local info = redis.call('HMGET', round_key, 'field_size', 'round_id', 'emitted')
if info[3] == '1' then
  return 0
end
for i = 1, #ARGV, 5000 do
  redis.call('SADD', emitted_key, unpack(ARGV, i, math.min(i + 4999, #ARGV)))
end
local missing = tonumber(info[1] or '0') - redis.call('SCARD', emitted_key)
if missing <= 0 then
  redis.call('HSET', round_key, 'emitted', '1')
  redis.call('DEL', emitted_key)
  redis.call('ZREM', incomplete_key, info[2])
  return 0
end
return missing
