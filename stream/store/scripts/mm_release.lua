-- mm_release: release the players of matches whose round (round_id = match_id) is rated, and of
-- matches formed MATCH_HOLD_S ago or more (expired): they may queue again. Idempotent.
-- One slot: every key of queue {q:Q}.
-- KEYS: keys.mm_keys(Q) (see mm_join.lua)
-- ARGV: now, hold_s, then the ids of matches whose round is rated
-- Returns {released rated match ids, expired match ids}.
local inmatch, finished, matches, live, outcomes = KEYS[3], KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local now, hold = tonumber(ARGV[1]), tonumber(ARGV[2])
local function release(mid, how)
  if not redis.call('ZSCORE', live, mid) then
    return false
  end
  local body = redis.call('HGET', matches, mid)
  if body then
    for _, team in ipairs(cjson.decode(body).teams) do
      for _, p in ipairs(team) do
        if redis.call('HGET', inmatch, p) == mid then
          redis.call('HDEL', inmatch, p)
        end
      end
    end
  end
  redis.call('ZREM', live, mid)
  redis.call('HSET', outcomes, mid, how .. '|' .. now)
  redis.call('ZADD', finished, now, 'm:' .. mid)
  return true
end
local rated, expired = {}, {}
for i = 3, #ARGV do
  if release(ARGV[i], 'rated') then
    rated[#rated + 1] = ARGV[i]
  end
end
for _, mid in ipairs(redis.call('ZRANGEBYSCORE', live, '-inf', now - hold, 'LIMIT', 0, 1000)) do
  if release(mid, 'expired') then
    expired[#expired + 1] = mid
  end
end
return {rated, expired}
