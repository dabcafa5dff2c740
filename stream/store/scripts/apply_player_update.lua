-- apply_player_update: write players' new states for round seq, each at most once.
-- Called with one player per call on Redis Cluster (its keys share the hash tag {L|P}, one
-- slot), or with many players per call on a single Redis (fewer round trips and commands).
-- KEYS[2i-1] player hash            ems:player:{L|P}
-- KEYS[2i]   rating history (list)  ems:history:{L|P}
-- ARGV[1] history_length            entries kept in each history
-- ARGV[2] seq                       the round's sequence number (same for every player)
-- ARGV[3] last_round                the round id
-- ARGV[4] last_time                 the round's time, epoch seconds
-- Per-player columns, in KEYS order (a few large arguments instead of ten per player: the
-- client's per-argument encoding dominated phase two):
-- ARGV[5] mu, ARGV[6] sigma, ARGV[7] rounds, ARGV[8] display_rating: space-separated numbers
--                                   (floats as repr, stored verbatim)
-- ARGV[9]/ARGV[10]  tier:   space-separated byte lengths / the names concatenated
-- ARGV[11]/ARGV[12] state:  lengths / packed engine states (PlayerState.to_bytes()) concatenated
-- ARGV[13]/ARGV[14] change: lengths / RatingChange JSON concatenated (appended to the history)
-- Returns per player 1 if applied now, 0 if this or a later round was already applied.
-- @include columns

local history_length = tonumber(ARGV[1])
local seq_text, last_round, last_time = ARGV[2], ARGV[3], ARGV[4]
local seq = tonumber(seq_text)
local mu, sigma, rounds, shown = words(ARGV[5]), words(ARGV[6]), words(ARGV[7]), words(ARGV[8])
local tier, state, change = pieces(ARGV[9], ARGV[10]), pieces(ARGV[11], ARGV[12]), pieces(ARGV[13], ARGV[14])
local out = {}
for i = 1, #KEYS / 2 do
  local player_key, history_key = KEYS[2 * i - 1], KEYS[2 * i]
  local last_seq = tonumber(redis.call('HGET', player_key, 'last_seq') or '0')
  if last_seq >= seq then
    out[i] = 0
  else
    redis.call('HSET', player_key,
      'last_seq', seq_text, 'mu', mu[i], 'sigma', sigma[i], 'rounds', rounds[i],
      'last_round', last_round, 'last_time', last_time, 'display_rating', shown[i],
      'tier', tier[i], 'state', state[i])
    if redis.call('RPUSH', history_key, change[i]) > history_length then
      redis.call('LTRIM', history_key, -history_length, -1)
    end
    out[i] = 1
  end
end
return out
