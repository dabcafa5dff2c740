-- apply_player_update: write players' new states for round seq, each at most once.
-- Called with one player per call on Redis Cluster (its keys share the hash tag {L|P}, one
-- slot), or with many players per call on a single Redis (fewer round trips and commands).
-- KEYS[2i-1] player hash            ems:player:{L|P}
-- KEYS[2i]   rating history (list)  ems:history:{L|P}
-- ARGV[1] history_length            entries kept in each history
-- ARGV[2] seq                       the round's sequence number (same for every player)
-- ARGV[3] last_round                the round id
-- ARGV[4] last_time                 the round's time, epoch seconds
-- then FIELDS arguments per player, in KEYS order (each one its own argument: cutting columns
-- apart in Lua cost more than the rest of the script, measured 4 of 12.6 µs per player):
--   mu, sigma, rounds, display_rating   numbers as text (floats as repr, stored verbatim)
--   tier                                tier name ("" = unplaced)
--   state                               packed engine state (PlayerState.to_bytes())
--   change                              RatingChange JSON (appended to the history)
-- Returns per player 1 if applied now, 0 if this or a later round was already applied.
local FIELDS = 7
local history_length = tonumber(ARGV[1])
local seq_text, last_round, last_time = ARGV[2], ARGV[3], ARGV[4]
local seq = tonumber(seq_text)
local out = {}
for i = 1, #KEYS / 2 do
  local player_key, history_key = KEYS[2 * i - 1], KEYS[2 * i]
  local a = 4 + FIELDS * (i - 1)
  local last_seq = tonumber(redis.call('HGET', player_key, 'last_seq') or '0')
  if last_seq >= seq then
    out[i] = 0
  else
    redis.call('HSET', player_key,
      'last_seq', seq_text, 'mu', ARGV[a + 1], 'sigma', ARGV[a + 2], 'rounds', ARGV[a + 3],
      'last_round', last_round, 'last_time', last_time, 'display_rating', ARGV[a + 4],
      'tier', ARGV[a + 5], 'state', ARGV[a + 6])
    if redis.call('RPUSH', history_key, ARGV[a + 7]) > history_length then
      redis.call('LTRIM', history_key, -history_length, -1)
    end
    out[i] = 1
  end
end
return out
