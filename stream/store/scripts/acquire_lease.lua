-- acquire_lease: take, or renew, a ladder's phase-one lease (one rater per ladder at a time) and
-- answer its fencing token.
-- The lease is a string (the holder's owner id) that expires after ARGV[2] ms: a crashed holder's
-- lease lapses by itself. The fence is a hash that never expires: "token", a counter, and "owner",
-- the owner that token was handed to. The token goes up whenever the lease changes hands (a new
-- owner, even after a lapse), and stays when its holder renews or takes it again with no one in
-- between; phase one's fenced writes (save_fanout.lua) refuse a token below the fence's: a
-- zombie (a worker whose lease lapsed and was taken) stores nothing.
-- One slot: keys of ladder {L}.
-- KEYS[1] lease   ems:lease:{L}
-- KEYS[2] fence   ems:fence:{L}
-- ARGV[1] owner   the attempt's owner id (non-empty)
-- ARGV[2] ttl     milliseconds the lease lasts from now
-- Returns the token (>= 1), or 0 if another owner holds the lease (nothing changed).
local owner = ARGV[1]
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= owner then
  return 0
end
local fence = redis.call('HMGET', KEYS[2], 'token', 'owner')
local token = tonumber(fence[1] or '0')
if fence[2] ~= owner then
  token = token + 1
  redis.call('HSET', KEYS[2], 'token', token, 'owner', owner)
end
redis.call('SET', KEYS[1], owner, 'PX', ARGV[2])
return token
