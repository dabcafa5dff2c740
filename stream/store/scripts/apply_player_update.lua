-- apply_player_update: write players' new states for round seq, each at most once.
-- Called with one player per call on Redis Cluster (its keys share the hash tag {L|P}, one
-- slot), or with many players per call on a single Redis (fewer round trips and commands).
-- KEYS[2i-1] player hash            ems:player:{L|P}
-- KEYS[2i]   rating history (list)  ems:history:{L|P}
-- ARGV[1] history_length            entries kept in each history
-- then per player, FIELDS values:
--   seq, mu, sigma, rounds, last_round, last_time, display_rating, tier, state (packed engine
--   state, PlayerState.to_bytes()), change (RatingChange JSON, appended to the history)
-- Returns per player 1 if applied now, 0 if this or a later round was already applied.
local FIELDS = 10
local history_length = tonumber(ARGV[1])
local out = {}
for i = 1, #KEYS / 2 do
  local player_key, history_key = KEYS[2 * i - 1], KEYS[2 * i]
  local a = 1 + (i - 1) * FIELDS
  local seq = tonumber(ARGV[a + 1])
  local last_seq = tonumber(redis.call('HGET', player_key, 'last_seq') or '0')
  if last_seq >= seq then
    out[i] = 0
  else
    redis.call('HSET', player_key,
      'last_seq', ARGV[a + 1], 'mu', ARGV[a + 2], 'sigma', ARGV[a + 3], 'rounds', ARGV[a + 4],
      'last_round', ARGV[a + 5], 'last_time', ARGV[a + 6], 'display_rating', ARGV[a + 7],
      'tier', ARGV[a + 8], 'state', ARGV[a + 9])
    redis.call('RPUSH', history_key, ARGV[a + 10])
    redis.call('LTRIM', history_key, -history_length, -1)
    out[i] = 1
  end
end
return out
