-- apply_player_update: write players' new states, each (player, round) at most once.
-- Called with one player per call on Redis Cluster (its keys share the hash tag {L|P}, one
-- slot), or with many players per call on a single Redis, possibly of several rounds (fewer
-- round trips and commands: phase two writes a batch of small rounds).
-- KEYS[2i-1] player hash            ems:player:{L|P}
-- KEYS[2i]   rating history (list)  ems:history:{L|P}
-- ARGV[1] history_length            entries kept in each history
-- ARGV[2] rounds                    how many rounds the call's players belong to (R)
-- then per round r = 1..R:          seq (its sequence number), last_round (the round id),
--                                   last_time (the round's time, epoch seconds), count (how many
--                                   of the call's players are the round's: the first count
--                                   players are round 1's, the next round 2's...)
-- then FIELDS arguments per player, in KEYS order (each one its own argument: cutting columns
-- apart in Lua cost more than the rest of the script, measured 4 of 12.6 µs per player):
--   mu, sigma, rounds, display_rating   numbers as text (floats as repr, stored verbatim)
--   tier                            tier name ("" = unplaced)
--   state                           packed engine state (engine.state.pack_batch)
--   change                          RatingChange JSON (appended to the history)
-- A player may appear several times (rounds in seq order): each sees the one before.
-- Returns per player (KEYS order) 1 if applied now, 0 if this or a later round was already applied.
local FIELDS = 7
local history_length = tonumber(ARGV[1])
local rounds = tonumber(ARGV[2])
local out = {}
local i = 0
local a = 3 + 4 * rounds   -- the first player's first argument
for r = 1, rounds do
  local h = 4 * r - 1
  local seq_text, round_id, time = ARGV[h], ARGV[h + 1], ARGV[h + 2]
  local seq = tonumber(seq_text)
  for _ = 1, tonumber(ARGV[h + 3]) do
    i = i + 1
    local player_key, history_key = KEYS[2 * i - 1], KEYS[2 * i]
    local last_seq = tonumber(redis.call('HGET', player_key, 'last_seq') or '0')
    if last_seq >= seq then
      out[i] = 0
    else
      redis.call('HSET', player_key,
        'last_seq', seq_text, 'mu', ARGV[a], 'sigma', ARGV[a + 1], 'rounds', ARGV[a + 2],
        'last_round', round_id, 'last_time', time, 'display_rating', ARGV[a + 3],
        'tier', ARGV[a + 4], 'state', ARGV[a + 5])
      if redis.call('RPUSH', history_key, ARGV[a + 6]) > history_length then
        redis.call('LTRIM', history_key, -history_length, -1)
      end
      out[i] = 1
    end
    a = a + FIELDS
  end
end
return out
