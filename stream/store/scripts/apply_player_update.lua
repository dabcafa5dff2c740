-- apply_player_update: write players' new states, each (player, round) at most once.
-- Called with one player per call on Redis Cluster (its keys share the hash tag {L|P}, one
-- slot), or with many players per call on a single Redis, possibly of several rounds (fewer
-- round trips and commands: phase two writes a batch of small rounds).
-- KEYS[2i-1] player hash            ems:player:{L|P}
-- KEYS[2i]   rating history (list)  ems:history:{L|P}
-- ARGV[1] history_length            entries kept in each history
-- ARGV[2] rounds                    how many rounds the call's players belong to (R)
-- then per round r = 1..R:          seq (its sequence number), last_round (the round id),
--                                   last_time (the round's time, epoch seconds)
-- then FIELDS arguments per player, in KEYS order (each one its own argument: cutting columns
-- apart in Lua cost more than the rest of the script, measured 4 of 12.6 µs per player):
--   round                           the player's round: r in 1..R
--   mu, sigma, rounds, display_rating   numbers as text (floats as repr, stored verbatim)
--   tier                            tier name ("" = unplaced)
--   state                           packed engine state (PlayerState.to_bytes())
--   change                          RatingChange JSON (appended to the history)
-- A player may appear several times (rounds in seq order): each sees the one before.
-- Returns per player (KEYS order) 1 if applied now, 0 if this or a later round was already applied.
local FIELDS = 8
local history_length = tonumber(ARGV[1])
local rounds = tonumber(ARGV[2])
local seq_texts, seqs, round_ids, times = {}, {}, {}, {}
for r = 1, rounds do
  local a = 3 * r
  seq_texts[r], round_ids[r], times[r] = ARGV[a], ARGV[a + 1], ARGV[a + 2]
  seqs[r] = tonumber(ARGV[a])
end
local out = {}
local i = 0
for a = 3 + 3 * rounds, #ARGV, FIELDS do
  i = i + 1
  local r = tonumber(ARGV[a])
  local player_key, history_key = KEYS[2 * i - 1], KEYS[2 * i]
  local last_seq = tonumber(redis.call('HGET', player_key, 'last_seq') or '0')
  if last_seq >= seqs[r] then
    out[i] = 0
  else
    redis.call('HSET', player_key,
      'last_seq', seq_texts[r], 'mu', ARGV[a + 1], 'sigma', ARGV[a + 2], 'rounds', ARGV[a + 3],
      'last_round', round_ids[r], 'last_time', times[r], 'display_rating', ARGV[a + 4],
      'tier', ARGV[a + 5], 'state', ARGV[a + 6])
    if redis.call('RPUSH', history_key, ARGV[a + 7]) > history_length then
      redis.call('LTRIM', history_key, -history_length, -1)
    end
    out[i] = 1
  end
end
return out
