-- record_round_results: the ladder-side bookkeeping of applied player updates of one or more
-- rounds of one ladder (phase two writes a batch of small rounds in few calls).
-- Idempotent: a player's result is recorded once (never overwritten); only a first record moves the
-- leaderboard and the counters. A round becomes "rated" when every player has a result.
-- One slot: keys of ladder {L}.
-- KEYS[1] leaderboard (zset)     ems:lb:{L}
-- KEYS[2] ladder hash            ems:ladder:{L}
-- KEYS[3] incomplete rounds      ems:incomplete:{L}  (unused here: a round leaves the sweeper's
--                                ledger once its events are emitted, confirm_emitted.lua)
-- KEYS[4] name index (zset)      ems:names:{L}  (every leaderboard member at score 0: prefix search)
-- then per round r (r = 1, 2, ...):
-- KEYS[3 + 2r] round record           ems:round:{L}:R
-- KEYS[4 + 2r] round results (hash)   ems:round-results:{L}:R
-- ARGV[1] now                    epoch seconds (rated_at / updated_at)
-- then one segment per round, in KEYS order:
--   count                        players of the round in this call
--   newcomer flags               one character per player, '1' if it is the player's first round
--   then FIELDS arguments per player (each its own argument: no parsing in Lua):
--     player, change (RatingChange JSON), display rating (repr float: the leaderboard score)
-- Returns the number of players still pending, per round.

local CHUNK = 1000
local FIELDS = 3
local lb_key, ladder_key, names_key = KEYS[1], KEYS[2], KEYS[4]
local now = ARGV[1]

-- Record the round's players of ARGV[first .. first + FIELDS * count - 1]; returns its pending count.
local function record(round_key, results_key, count, newcomer, first)
  local seen = {}
  local players = {}
  for i = 1, count do
    players[i] = ARGV[first + FIELDS * (i - 1)]
  end
  local new_players = 0
  -- In chunks (Lua's unpack limit), with bulk commands: HMGET finds the players already recorded,
  -- one HSET and one ZADD record the others (the same outcome as HSETNX + ZADD per player, with
  -- a few commands per thousand players instead of two per player).
  for lo = 1, #players, CHUNK do
    local hi = math.min(lo + CHUNK - 1, #players)
    local stored = redis.call('HMGET', results_key, unpack(players, lo, hi))
    local results, scores, names = {}, {}, {}
    for i = lo, hi do
      local player = players[i]
      if not stored[i - lo + 1] and not seen[player] then
        local a = first + FIELDS * (i - 1)
        seen[player] = true
        results[#results + 1] = player
        results[#results + 1] = ARGV[a + 1]
        scores[#scores + 1] = ARGV[a + 2]
        scores[#scores + 1] = player
        names[#names + 1] = 0
        names[#names + 1] = player
        if string.byte(newcomer, i) == 49 then  -- '1'
          new_players = new_players + 1
        end
      end
    end
    if #results > 0 then
      redis.call('HSET', results_key, unpack(results))
      redis.call('ZADD', lb_key, unpack(scores))
      redis.call('ZADD', names_key, unpack(names))
    end
  end
  if new_players > 0 then
    redis.call('HINCRBY', ladder_key, 'players', new_players)
  end
  local info = redis.call('HMGET', round_key, 'field_size', 'status', 'seq', 'round_id')
  local pending = tonumber(info[1] or '0') - redis.call('HLEN', results_key)
  if pending < 0 then pending = 0 end
  redis.call('HSET', round_key, 'pending', pending)
  if pending == 0 and info[2] == 'pending' then
    redis.call('HSET', round_key, 'status', 'rated', 'rated_at', now)
    redis.call('HINCRBY', ladder_key, 'rounds_rated', 1)
    local last_seq = tonumber(redis.call('HGET', ladder_key, 'last_rated_seq') or '0')
    if tonumber(info[3]) > last_seq then
      redis.call('HSET', ladder_key, 'last_rated_seq', info[3], 'last_round', info[4])
    end
    redis.call('HSET', ladder_key, 'updated_at', now)
  end
  return pending
end

local out = {}
local a = 2
for r = 1, (#KEYS - 4) / 2 do
  local count = tonumber(ARGV[a])
  out[r] = record(KEYS[3 + 2 * r], KEYS[4 + 2 * r], count, ARGV[a + 1], a + 2)
  a = a + 2 + FIELDS * count
end
return out
