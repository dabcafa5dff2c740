-- record_round_results: the ladder-side bookkeeping of applied player updates of one round.
-- Idempotent: a player's result is recorded once (never overwritten); only a first record moves the
-- leaderboard and the counters. The round becomes "rated" when every player has a result.
-- One slot: keys of ladder {L}.
-- KEYS[1] round record           ems:round:{L}:R
-- KEYS[2] round results (hash)   ems:round-results:{L}:R
-- KEYS[3] leaderboard (zset)     ems:lb:{L}
-- KEYS[4] ladder hash            ems:ladder:{L}
-- KEYS[5] incomplete rounds      ems:incomplete:{L}  (unused here: a round leaves the sweeper's
--                                ledger once its events are emitted, confirm_emitted.lua)
-- KEYS[6] name index (zset)      ems:names:{L}  (every leaderboard member at score 0: prefix search)
-- ARGV[1] now                    epoch seconds (rated_at / updated_at)
-- ARGV[2] newcomer flags         one character per player, '1' if it is the player's first round
-- then FIELDS arguments per player (each its own argument: no parsing in Lua):
--   player, change (RatingChange JSON), display rating (repr float: the leaderboard score)
-- Returns the number of players still pending.

local CHUNK = 1000
local FIELDS = 3
local round_key, results_key, lb_key, ladder_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local seen = {}
local now, newcomer = ARGV[1], ARGV[2]
local players = {}
for i = 1, (#ARGV - 2) / FIELDS do
  players[i] = ARGV[3 + FIELDS * (i - 1)]
end
local new_players = 0
-- In chunks (Lua's unpack limit), with bulk commands: HMGET finds the players already recorded,
-- one HSET and one ZADD record the others (the same outcome as HSETNX + ZADD per player, with
-- a few commands per thousand players instead of two per player).
for first = 1, #players, CHUNK do
  local last = math.min(first + CHUNK - 1, #players)
  local stored = redis.call('HMGET', results_key, unpack(players, first, last))
  local results, scores, names = {}, {}, {}
  for i = first, last do
    local player = players[i]
    if not stored[i - first + 1] and not seen[player] then
      local a = 2 + FIELDS * (i - 1)
      seen[player] = true
      results[#results + 1] = player
      results[#results + 1] = ARGV[a + 2]
      scores[#scores + 1] = ARGV[a + 3]
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
    redis.call('ZADD', KEYS[6], unpack(names))
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
