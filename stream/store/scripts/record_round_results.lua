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
-- then per round r, in KEYS order (ARGV[2r], ARGV[2r + 1]):
--   count                        players of the round in this call
--   newcomer flags               one character per player, '1' if it is the player's first round
-- then FIELDS arguments per player, the rounds' players one round after the other (each its own
-- argument: no parsing in Lua):
--     player, change (RatingChange JSON), display rating (repr float: the leaderboard score)
-- Returns the number of players still pending, per round.
--
-- Per round: its results' size (HLEN), which players are already recorded (HMGET, skipped while
-- the round has none: a round's first record), the new results (one HSET; a lone player of a round
-- already partly recorded, the second section of a duel: one HSETNX instead), the round's record
-- (HMGET, one HSET). The leaderboard, the name index and the ladder's counters are written once
-- per call (a batch of duels is one call: ~4 commands per round), with the outcome of recording
-- the rounds one by one: a player of several rounds keeps his last score, the ladder's
-- last_rated_seq the highest rated seq.

local CHUNK = 1000
local FIELDS = 3
local lb_key, ladder_key, names_key = KEYS[1], KEYS[2], KEYS[4]
local now = ARGV[1]

local scores, names = {}, {}   -- the call's new leaderboard entries, in order
local new_players, rated = 0, 0
local best_seq, best_text, best_round = 0, nil, nil   -- the highest seq rated by this call

-- Record the round's players of ARGV[first .. first + FIELDS * count - 1]; returns its pending count.
local function record(round_key, results_key, count, newcomer, first)
  local seen = {}
  local players = {}
  for i = 1, count do
    players[i] = ARGV[first + FIELDS * (i - 1)]
  end
  -- In chunks (Lua's unpack limit): HMGET finds the players already recorded, one HSET records the
  -- others (the same outcome as HSETNX + ZADD per player). The size after is the size before plus
  -- the fields added (each one new: not recorded, and once).
  local recorded = redis.call('HLEN', results_key)
  -- The player of ARGV[a..] is recorded now: his leaderboard entry and the counters follow.
  local function recorded_now(player, a, i)
    scores[#scores + 1] = ARGV[a + 2]
    scores[#scores + 1] = player
    names[#names + 1] = '0'
    names[#names + 1] = player
    if string.byte(newcomer, i) == 49 then  -- '1'
      new_players = new_players + 1
    end
  end
  if count == 1 and recorded > 0 then
    -- one player (a duel's section after the other's): HSETNX, the same outcome in one command
    if redis.call('HSETNX', results_key, players[1], ARGV[first + 1]) == 1 then
      recorded_now(players[1], first, 1)
      recorded = recorded + 1
    end
    count = 0
  end
  for lo = 1, count, CHUNK do
    local hi = math.min(lo + CHUNK - 1, count)
    local stored = {}
    if recorded > 0 then
      stored = redis.call('HMGET', results_key, unpack(players, lo, hi))
    end
    local results = {}
    for i = lo, hi do
      local player = players[i]
      if not stored[i - lo + 1] and not seen[player] then
        local a = first + FIELDS * (i - 1)
        seen[player] = true
        results[#results + 1] = player
        results[#results + 1] = ARGV[a + 1]
        recorded_now(player, a, i)
      end
    end
    if #results > 0 then
      redis.call('HSET', results_key, unpack(results))
      recorded = recorded + #results / 2
    end
  end
  local info = redis.call('HMGET', round_key, 'field_size', 'status', 'seq', 'round_id')
  local pending = tonumber(info[1] or '0') - recorded
  if pending < 0 then pending = 0 end
  if pending == 0 and info[2] == 'pending' then
    redis.call('HSET', round_key, 'pending', pending, 'status', 'rated', 'rated_at', now)
    rated = rated + 1
    local seq = tonumber(info[3])
    if seq > best_seq then
      best_seq, best_text, best_round = seq, info[3], info[4]
    end
  else
    redis.call('HSET', round_key, 'pending', pending)
  end
  return pending
end

-- ZADD (score, member) pairs, at most CHUNK pairs a command.
local function zadd(key, entries)
  for lo = 1, #entries, 2 * CHUNK do
    redis.call('ZADD', key, unpack(entries, lo, math.min(lo + 2 * CHUNK - 1, #entries)))
  end
end

local out = {}
local rounds = (#KEYS - 4) / 2
local a = 2 + 2 * rounds   -- the first round's first player
for r = 1, rounds do
  local count = tonumber(ARGV[2 * r])
  out[r] = record(KEYS[3 + 2 * r], KEYS[4 + 2 * r], count, ARGV[2 * r + 1], a)
  a = a + FIELDS * count
end
zadd(lb_key, scores)
zadd(names_key, names)
if new_players > 0 or rated > 0 then
  -- the counters and last_rated_seq: one read, one write
  local ladder = redis.call('HMGET', ladder_key, 'players', 'rounds_rated', 'last_rated_seq')
  local update = {}
  if new_players > 0 then
    update[#update + 1] = 'players'
    update[#update + 1] = tonumber(ladder[1] or '0') + new_players
  end
  if rated > 0 then
    update[#update + 1] = 'rounds_rated'
    update[#update + 1] = tonumber(ladder[2] or '0') + rated
    if best_seq > tonumber(ladder[3] or '0') then
      update[#update + 1] = 'last_rated_seq'
      update[#update + 1] = best_text
      update[#update + 1] = 'last_round'
      update[#update + 1] = best_round
    end
    update[#update + 1] = 'updated_at'
    update[#update + 1] = now
  end
  redis.call('HSET', ladder_key, unpack(update))
end
return out
