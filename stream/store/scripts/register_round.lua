-- register_round: assign a ladder sequence number to a round id, once; detect conflicting re-use.
-- One slot: every key carries the ladder's hash tag {L}.
-- KEYS[1] ladder hash            ems:ladder:{L}
-- KEYS[2] round record           ems:round:{L}:R
-- KEYS[3] rounds index (zset)    ems:rounds:{L}
-- ARGV[1] round_id
-- ARGV[2] content_hash           sha256 of the canonical round
-- ARGV[3] occurred_at            epoch seconds
-- ARGV[4] received_at            epoch seconds
-- ARGV[5] field_size             number of standings
-- ARGV[6] status                 status of a new record: "registered" (to rate) or "no_outcome"
-- Returns {outcome, seq, status}: outcome "new" | "existing" | "conflict"; status of the stored record.
local ladder_key, round_key, index_key = KEYS[1], KEYS[2], KEYS[3]
local round_id, content_hash = ARGV[1], ARGV[2]

local existing = redis.call('HMGET', round_key, 'content_hash', 'seq', 'status')
if existing[1] then
  if existing[1] ~= content_hash then
    return {'conflict', tonumber(existing[2]), existing[3]}
  end
  return {'existing', tonumber(existing[2]), existing[3]}
end

local seq = redis.call('HINCRBY', ladder_key, 'seq', 1)
redis.call('HSET', round_key,
  'round_id', round_id, 'seq', seq, 'status', ARGV[6], 'field_size', ARGV[5],
  'occurred_at', ARGV[3], 'received_at', ARGV[4], 'content_hash', content_hash)
redis.call('ZADD', index_key, seq, round_id)
return {'new', seq, ARGV[6]}
