-- mm_cancel: cancel one ticket; honoured while the ticket waits in the pool (no tick took it). A
-- snippet, no script of its own: mm_apply.lua runs it as a function per cancel of a batch.
-- One slot: every key of queue {q:Q}.
-- KEYS: keys.mm_keys(Q) (see mm_join.lua)
-- ARGV: ticket_id, now
-- Returns {'cancelled', status JSON} (the ticket left the pool; a ticket never seen is recorded
-- cancelled, so its join arriving later is a no-op) or {'too_late', the stored status JSON}
-- (matched, timed out, rejected, or already cancelled: nothing done).
--@include mm_unpool
local pool, waiting, status, finished = KEYS[1], KEYS[2], KEYS[4], KEYS[5]
local tid, now = ARGV[1], tonumber(ARGV[2])
local r = unpool(pool, waiting, tid)
if r then
  local st = cjson.encode({status = 'cancelled', at = now, wait = math.max(0, now - r.since), players = r.players})
  redis.call('HSET', status, tid, st)
  redis.call('ZADD', finished, now, tid)
  return {'cancelled', st}
end
local stored = redis.call('HGET', status, tid)
if not stored then
  local st = cjson.encode({status = 'cancelled', reason = 'before_join', at = now, wait = 0})
  redis.call('HSET', status, tid, st)
  redis.call('ZADD', finished, now, tid)
  return {'cancelled', st}
end
return {'too_late', stored}
