-- mm_commit: a tick's claim and commit, atomic: each formed match is recorded only if every one of
-- its tickets still waits in the pool (a cancel or another tick may have taken one since the pool
-- was read; then the match is dropped and its other tickets wait for the next tick) and its id is
-- new; its tickets leave the pool, its players are in match, and its records to send go to the
-- outbox (sent, then removed by the caller: a crash in between re-sends them, same match id).
-- Tickets past the queue's maximum wait leave the pool as timed out (their event to the outbox).
-- One slot: every key of queue {q:Q}.
-- KEYS: keys.mm_keys(Q) (see mm_join.lua)
-- ARGV: now, n matches, n timeouts, trim_before (finished tickets and released matches older than
--       this are forgotten), recent_max, waits_max,
--       per match: match_id, formed_at, match JSON, outbox records, quality, k, k ticket ids, k waits,
--                  m, m players;
--       per timeout: ticket_id, wait, outbox records
-- Returns {committed match ids, timed out ticket ids, version before, version after}: the pool's
-- version (KEYS[12]) is bumped once if a ticket left the pool.
--@include mm_unpool
local pool, waiting, inmatch, status, finished, matches, live, outcomes, outbox, recent, waits =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11]
local now, n_matches, n_timeouts = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local trim_before, recent_max, waits_max = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local at = 7
local committed, timed_out = {}, {}
-- the checks first, match by match (a ticket or id taken by an earlier match of this commit counts
-- as gone), then each key written once per chunk of values (one call instead of one per ticket)
local taken, ids = {}, {}
local unpooled, statuses, finishes, pushed_waits, players_out, booked = {}, {}, {}, {}, {}, {}
local bodies, lives, records_out, recents = {}, {}, {}, {}
for _ = 1, n_matches do
  local mid, formed, body, records, quality = ARGV[at], ARGV[at + 1], ARGV[at + 2], ARGV[at + 3], ARGV[at + 4]
  local k = tonumber(ARGV[at + 5])
  local t0, w0 = at + 6, at + 6 + k
  local m = tonumber(ARGV[w0 + k])
  local p0 = w0 + k + 1
  at = p0 + m
  local ok = not ids[mid] and redis.call('HEXISTS', matches, mid) == 0
  if ok then
    for i = t0, t0 + k - 1 do
      if taken[ARGV[i]] or redis.call('HEXISTS', pool, ARGV[i]) == 0 then
        ok = false
        break
      end
    end
  end
  if ok then
    ids[mid] = true
    local max_wait = 0
    for i = 0, k - 1 do
      local tid, wait = ARGV[t0 + i], tonumber(ARGV[w0 + i])
      taken[tid] = true
      unpooled[#unpooled + 1] = tid
      statuses[#statuses + 1] = tid
      statuses[#statuses + 1] = cjson.encode({status = 'matched', match_id = mid, wait = wait, at = now})
      finishes[#finishes + 1] = now
      finishes[#finishes + 1] = tid
      pushed_waits[#pushed_waits + 1] = formed .. ' ' .. ARGV[w0 + i]
      if wait > max_wait then max_wait = wait end
    end
    for i = p0, p0 + m - 1 do
      players_out[#players_out + 1] = ARGV[i]
      booked[#booked + 1] = ARGV[i]
      booked[#booked + 1] = mid
    end
    bodies[#bodies + 1] = mid
    bodies[#bodies + 1] = body
    lives[#lives + 1] = formed
    lives[#lives + 1] = mid
    records_out[#records_out + 1] = mid
    records_out[#records_out + 1] = records
    recents[#recents + 1] = formed .. ' ' .. quality .. ' ' .. max_wait
    committed[#committed + 1] = mid
  end
end
local function each_chunk(command, key, values)
  -- command key v1 v2 ... in chunks (unpack's stack limit); the chunk size is even (field/value pairs)
  for i = 1, #values, 4000 do
    redis.call(command, key, unpack(values, i, math.min(i + 3999, #values)))
  end
end
each_chunk('HDEL', pool, unpooled)
each_chunk('HSET', status, statuses)
each_chunk('ZADD', finished, finishes)
each_chunk('LPUSH', waits, pushed_waits)
each_chunk('HDEL', waiting, players_out)
each_chunk('HSET', inmatch, booked)
each_chunk('HSET', matches, bodies)
each_chunk('ZADD', live, lives)
each_chunk('HSET', outbox, records_out)
each_chunk('LPUSH', recent, recents)
for _ = 1, n_timeouts do
  local tid, wait, records = ARGV[at], ARGV[at + 1], ARGV[at + 2]
  at = at + 3
  if unpool(pool, waiting, tid) then
    redis.call('HSET', status, tid, cjson.encode({status = 'timed_out', wait = tonumber(wait), at = now}))
    redis.call('ZADD', finished, now, tid)
    redis.call('HSET', outbox, 't:' .. tid, records)
    timed_out[#timed_out + 1] = tid
  end
end
redis.call('LTRIM', recent, 0, recent_max - 1)
redis.call('LTRIM', waits, 0, waits_max - 1)
local old = redis.call('ZRANGEBYSCORE', finished, '-inf', trim_before, 'LIMIT', 0, 1000)
for _, id in ipairs(old) do
  if string.sub(id, 1, 2) == 'm:' then
    redis.call('HDEL', matches, string.sub(id, 3))
    redis.call('HDEL', outcomes, string.sub(id, 3))
  else
    redis.call('HDEL', status, id)
  end
end
if #old > 0 then
  redis.call('ZREM', finished, unpack(old))
end
local before = tonumber(redis.call('GET', KEYS[12]) or '0')
local after = before
if #committed > 0 or #timed_out > 0 then
  after = redis.call('INCR', KEYS[12])
end
return {committed, timed_out, before, after}
