-- register_round: assign ladder sequence numbers to round ids, once each; detect conflicting re-use.
-- Several rounds of one ladder per call (a batch's rounds: one call, not one per round), handled
-- in order as one call per round would (a round sees the rounds before it, e.g. a duplicate).
-- One slot: every key carries the ladder's hash tag {L}.
-- KEYS[1] ladder hash            ems:ladder:{L}
-- KEYS[2] rounds index (zset)    ems:rounds:{L}
-- KEYS[3] registered rounds      ems:registered:{L}  (round id by seq while phase one is unfinished)
-- KEYS[4] incomplete rounds      ems:incomplete:{L}  (round id by sweep due time until rated)
-- KEYS[4 + k] round record       ems:round:{L}:R of the k-th round
-- ARGV: FIELDS arguments per round, in KEYS order:
--   round_id
--   content_hash           sha256 of the canonical round
--   occurred_at            epoch seconds
--   received_at            epoch seconds
--   field_size             number of standings
--   status                 status of a new record: "registered" (to rate) or "no_outcome"
--   body                   canonical round JSON, kept while "registered" (the sweeper
--                          re-runs phase one from it if the input is never redelivered)
--   due_at                 when the sweeper may re-drive the round ("+inf": never)
--   perf_ceiling           the round's performance ceiling ("" = none), kept for re-rates
--   model                  the ladder's configured model ("" = not checked): a new round to
--                          rate ("registered") of a ladder that has recorded another model
--                          is not registered; the first such round records it (field "model")
--   params digest          recorded with the model (field "model_params", informational)
--   by time                "1": the ladder is rated in occurred_at order (LADDER_ORDER): a new
--                          round to rate older than the ladder's newest one (the ladder
--                          hash's "occurred_max", kept on every ladder: the newest occurred_at
--                          registered to rate) is registered "late" instead (see below)
-- ARGV[#ARGV] (after the rounds' arguments): the ladder's schedule version the registering worker
--   holds (the ladder hash's "schedule_version" when it last read the seasons of record): a round to
--   rate at or after a start it has not read ("season_start:<its version + 1>", the earliest: starts
--   only grow; a missing one, after a restore, counts as every round) is not registered, nor is any
--   later round of the call: {"stale_schedule", 0, the ladder's version} (the caller reads the
--   schedule again and registers again), so no round is rated with a schedule older than Redis's.
-- Returns per round: {"model_changed", 0, stored model} for a round of a ladder whose model changed;
-- {"held", 0, correction id} while a correction re-rates the ladder (the ladder hash's
-- field "hold": nothing is registered; the caller waits and registers again), else
-- {"late", seq, insert id} for a late round (by time only): its record "late" (body kept, neither in
-- the registered rounds nor in the sweeper's ledger) and the ladder held at once by the insert
-- correction "late/<seq>/<round_id>" that phase one publishes (a redelivered late round answers
-- the same again, held or not, so the correction is published again: it is idempotent), else
-- {outcome, seq, status}: outcome "new" | "existing" | "conflict"; status of the stored record.
-- (The caller reads the ladder's rounds still "registered" after the call: those with a smaller
-- seq than a round are the ones phase one must complete first.)
-- The ladder hash is read once and written once, the index and the ledgers by one ZADD each.
local FIELDS = 12
local ladder_key, index_key, registered_key, incomplete_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]

local ladder = redis.call('HMGET', ladder_key, 'hold', 'model', 'occurred_max', 'seq', 'schedule_version')
local hold, model, occurred_max = ladder[1], ladder[2], ladder[3]
local last_seq = tonumber(ladder[4] or '0')
local held_version, schedule_version = tonumber(ARGV[#ARGV]), tonumber(ladder[5] or '0')
local unread = nil             -- the earliest start the worker has not read (nil: none)
if held_version < schedule_version then
  unread = tonumber(redis.call('HGET', ladder_key, 'season_start:' .. (held_version + 1)) or '-1e308')
end
local stale = false            -- a round of the call was refused: so are the later ones
local ladder_fields = {}            -- written with one HSET at the end
local index, registered, incomplete = {}, {}, {}   -- (score, member) pairs, one ZADD each

local function set(name, value)
  ladder_fields[#ladder_fields + 1] = name
  ladder_fields[#ladder_fields + 1] = value
end

-- Register the round of KEYS[round_key] with ARGV[a .. a + FIELDS - 1]; returns its reply.
local function register(round_key, a)
  local round_id, content_hash, occurred_at, received_at = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  local status, body, due_at, perf_ceiling = ARGV[a + 5], ARGV[a + 6], ARGV[a + 7], ARGV[a + 8]
  local wanted_model, by_time = ARGV[a + 9], ARGV[a + 11]

  local existing = redis.call('HMGET', round_key, 'content_hash', 'seq', 'status')
  local late = existing[3] == 'late' and existing[1] == content_hash
  if hold and not late then
    return {'held', 0, hold}
  end
  if late then
    return {'late', tonumber(existing[2]), string.sub('late/' .. existing[2] .. '/' .. round_id, 1, 256)}
  end
  if existing[1] then
    return {existing[1] ~= content_hash and 'conflict' or 'existing', tonumber(existing[2]), existing[3]}
  end

  local to_rate = status == 'registered'
  if stale or (to_rate and unread and tonumber(occurred_at) >= unread) then
    stale = true
    return {'stale_schedule', 0, tostring(schedule_version)}
  end
  if wanted_model ~= '' and to_rate then
    if model and model ~= wanted_model then
      return {'model_changed', 0, model}
    end
    if not model then
      model = wanted_model
      set('model', model)
      set('model_params', ARGV[a + 10])
    end
  end

  last_seq = last_seq + 1
  local seq = tostring(last_seq)
  local record = {'round_id', round_id, 'seq', seq, 'status', status, 'field_size', ARGV[a + 4],
    'occurred_at', occurred_at, 'received_at', received_at, 'content_hash', content_hash}
  if perf_ceiling ~= '' then
    record[#record + 1] = 'perf_ceiling'
    record[#record + 1] = perf_ceiling
  end
  if to_rate then
    record[#record + 1] = 'body'
    record[#record + 1] = body
  end
  index[#index + 1] = seq
  index[#index + 1] = round_id
  if to_rate and by_time == '1' then
    if occurred_max and tonumber(occurred_at) < tonumber(occurred_max) then
      local id = string.sub('late/' .. seq .. '/' .. round_id, 1, 256)
      record[6] = 'late'
      redis.call('HSET', round_key, unpack(record))
      hold = id
      set('hold', id)
      set('hold_since', received_at)
      return {'late', last_seq, id}
    end
  end
  if to_rate and (not occurred_max or tonumber(occurred_at) > tonumber(occurred_max)) then
    occurred_max = occurred_at   -- every ladder's: a season may only start after it (schedule_season.lua)
    set('occurred_max', occurred_at)
  end
  redis.call('HSET', round_key, unpack(record))
  if to_rate then
    registered[#registered + 1] = seq
    registered[#registered + 1] = round_id
    incomplete[#incomplete + 1] = due_at
    incomplete[#incomplete + 1] = round_id
  end
  return {'new', last_seq, status}
end

local out = {}
for k = 1, #KEYS - 4 do   -- ARGV[#ARGV] is the schedule version, after the rounds'
  out[k] = register(KEYS[4 + k], 1 + FIELDS * (k - 1))
end
if #index > 0 then
  set('seq', tostring(last_seq))
  redis.call('ZADD', index_key, unpack(index))
end
if #ladder_fields > 0 then
  redis.call('HSET', ladder_key, unpack(ladder_fields))
end
if #registered > 0 then
  redis.call('ZADD', registered_key, unpack(registered))
  redis.call('ZADD', incomplete_key, unpack(incomplete))
end
return out
