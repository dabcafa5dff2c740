-- mm_join: a join of one ticket to its queue's pool, idempotent on the ticket id. A snippet, no script
-- of its own: mm_apply.lua runs it as a function per join of a batch.
-- One slot: every key of queue {q:Q}.
-- KEYS: keys.mm_keys(Q): pool, waiting, inmatch, status, finished, matches, live, outcomes, outbox, recent, waits,
--       version (bumped by mm_apply.lua and mm_commit.lua when they change the pool)
-- ARGV: ticket_id, now, hold_s (MATCH_HOLD_S), the ticket's pool record (JSON), then the party's players
-- Returns {'new', status JSON}: the ticket waits in the pool;
--         {'duplicate', status JSON}: the ticket id is known (joined, cancelled, matched, ...): nothing done;
--         {'rejected', reason, player, status JSON}: a player already waits in the queue ('waiting') or is in
--         a match not rated yet ('in_match'); the ticket is recorded rejected (a redelivery stays rejected).
local pool, waiting, inmatch, status, finished, live = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[7]
local tid, now, hold = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local stored = redis.call('HGET', status, tid)
if stored then
  return {'duplicate', stored}
end
local players = {}
for i = 5, #ARGV do
  players[#players + 1] = ARGV[i]
end
local function reject(reason, player)
  local st = cjson.encode({status = 'rejected', reason = reason, player = player, at = now, players = players})
  redis.call('HSET', status, tid, st)
  redis.call('ZADD', finished, now, tid)
  return {'rejected', reason, player, st}
end
for _, p in ipairs(players) do
  if redis.call('HEXISTS', waiting, p) == 1 then
    return reject('waiting', p)
  end
  local m = redis.call('HGET', inmatch, p)
  if m then
    local formed = redis.call('ZSCORE', live, m)
    if formed and tonumber(formed) + hold > now then
      return reject('in_match', p)
    end
    redis.call('HDEL', inmatch, p)  -- its match was released (rated or held too long)
  end
end
redis.call('HSET', pool, tid, ARGV[4])
for _, p in ipairs(players) do
  redis.call('HSET', waiting, p, tid)
end
local st = cjson.encode({status = 'searching', at = now, players = players})
redis.call('HSET', status, tid, st)
return {'new', st}
