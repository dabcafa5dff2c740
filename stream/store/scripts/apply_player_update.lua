-- apply_player_update: write one player's new state for round seq, at most once.
-- One slot: the player's keys share the hash tag {L|P}.
-- KEYS[1] player hash            ems:player:{L|P}
-- KEYS[2] rating history (list)  ems:history:{L|P}
-- ARGV[1] seq                    the round's ladder sequence number
-- ARGV[2] mu
-- ARGV[3] sigma
-- ARGV[4] rounds                 rated rounds including this one
-- ARGV[5] last_round             round id
-- ARGV[6] last_time              epoch seconds of the round
-- ARGV[7] display_rating
-- ARGV[8] tier
-- ARGV[9] state                  packed engine state (PlayerState.to_bytes())
-- ARGV[10] change                RatingChange JSON, appended to the history
-- ARGV[11] history_length        entries kept in the history
-- Returns 1 if applied now, 0 if this or a later round was already applied (idempotency).
local player_key, history_key = KEYS[1], KEYS[2]
local seq = tonumber(ARGV[1])
local last_seq = tonumber(redis.call('HGET', player_key, 'last_seq') or '0')
if last_seq >= seq then
  return 0
end
redis.call('HSET', player_key,
  'mu', ARGV[2], 'sigma', ARGV[3], 'rounds', ARGV[4], 'last_round', ARGV[5],
  'last_seq', ARGV[1], 'last_time', ARGV[6], 'display_rating', ARGV[7], 'tier', ARGV[8],
  'state', ARGV[9])
redis.call('RPUSH', history_key, ARGV[10])
redis.call('LTRIM', history_key, -tonumber(ARGV[11]), -1)
return 1
