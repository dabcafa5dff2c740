-- register_round: assign a ladder sequence number to a round id, once; detect conflicting re-use.
-- One slot: every key carries the ladder's hash tag {L}.
-- KEYS[1] ladder hash            ems:ladder:{L}
-- KEYS[2] round record           ems:round:{L}:R
-- KEYS[3] rounds index (zset)    ems:rounds:{L}
-- KEYS[4] registered rounds      ems:registered:{L}  (round id by seq while phase one is unfinished)
-- KEYS[5] incomplete rounds      ems:incomplete:{L}  (round id by sweep due time until rated)
-- ARGV[1] round_id
-- ARGV[2] content_hash           sha256 of the canonical round
-- ARGV[3] occurred_at            epoch seconds
-- ARGV[4] received_at            epoch seconds
-- ARGV[5] field_size             number of standings
-- ARGV[6] status                 status of a new record: "registered" (to rate) or "no_outcome"
-- ARGV[7] body                   canonical round JSON, kept while "registered" (the sweeper
--                                re-runs phase one from it if the input is never redelivered)
-- ARGV[8] due_at                 when the sweeper may re-drive the round ("+inf": never)
-- ARGV[9] perf_ceiling           the round's performance ceiling ("" = none), kept for re-rates
-- ARGV[10] earlier               "0": leave out the earlier rounds (a batch reads the registered
--                                rounds once, after registering all of its rounds); else "1"
-- ARGV[11] model                the ladder's configured model ("" = not checked): a new round to
--                                rate ("registered") of a ladder that has recorded another model
--                                is not registered; the first such round records it (field "model")
-- ARGV[12] params digest         recorded with the model (field "model_params", informational)
-- Returns {"model_changed", 0, stored model} for such a round;
-- {"held", 0, correction id} while a correction re-rates the ladder (the ladder hash's
-- field "hold": nothing is registered; the caller waits and registers again), else
-- {outcome, seq, status, earlier...}: outcome "new" | "existing" | "conflict"; status of
-- the stored record; earlier = ids of this ladder's rounds still "registered" with a smaller seq
-- (phase one must complete them first: their priors are only valid while no later round passed).
local ladder_key, round_key, index_key, registered_key, incomplete_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local round_id, content_hash = ARGV[1], ARGV[2]

local function reply(outcome, seq, status)
  local out = {outcome, seq, status}
  if outcome ~= 'conflict' and ARGV[10] ~= '0' then
    for _, earlier in ipairs(redis.call('ZRANGEBYSCORE', registered_key, '-inf', '(' .. seq)) do
      out[#out + 1] = earlier
    end
  end
  return out
end

local hold = redis.call('HGET', ladder_key, 'hold')
if hold then
  return {'held', 0, hold}
end

local existing = redis.call('HMGET', round_key, 'content_hash', 'seq', 'status')
if existing[1] then
  if existing[1] ~= content_hash then
    return reply('conflict', tonumber(existing[2]), existing[3])
  end
  return reply('existing', tonumber(existing[2]), existing[3])
end

if ARGV[11] and ARGV[11] ~= '' and ARGV[6] == 'registered' then
  local model = redis.call('HGET', ladder_key, 'model')
  if model and model ~= ARGV[11] then
    return {'model_changed', 0, model}
  end
  if not model then
    redis.call('HSET', ladder_key, 'model', ARGV[11], 'model_params', ARGV[12])
  end
end

local seq = redis.call('HINCRBY', ladder_key, 'seq', 1)
redis.call('HSET', round_key,
  'round_id', round_id, 'seq', seq, 'status', ARGV[6], 'field_size', ARGV[5],
  'occurred_at', ARGV[3], 'received_at', ARGV[4], 'content_hash', content_hash)
redis.call('ZADD', index_key, seq, round_id)
if ARGV[9] and ARGV[9] ~= '' then
  redis.call('HSET', round_key, 'perf_ceiling', ARGV[9])
end
if ARGV[6] == 'registered' then
  redis.call('HSET', round_key, 'body', ARGV[7])
  redis.call('ZADD', registered_key, seq, round_id)
  redis.call('ZADD', incomplete_key, ARGV[8], round_id)
end
return reply('new', seq, ARGV[6])
