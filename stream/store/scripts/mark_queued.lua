-- mark_queued: record that round seq is rated for each player (the per-player barrier).
-- A player's marks are the rounds phase one rated for him that the barrier of a later round may
-- still wait for: queued_seq is the newest (monotonic: never goes down), queued_prev the next
-- newest, queued_older the others, oldest first, space-separated. The attempt at round s waits for
-- the newest mark below s (Store.priors): while s is registered no later round of its ladder is
-- stored (save_fanout.lua), so a mark at or above s is what an attempt that crashed or was fenced
-- left (phase one marks a batch's rounds before any is applied, and on Redis Cluster or for a big
-- round before their fan-outs are stored), and the player's previous round is the newest below s.
-- Dropped: a mark at or below last_seq (phase two applied it), and with ARGV[2] "stored" (the round
-- is stored: queue_rounds.lua marks after save_fanout.lua) every mark below seq (no attempt rates a
-- round below a stored one again). Marks come in seq order but after a failure (the next attempt
-- marks those rounds again, or a round below a leftover): then the mark is inserted in order.
-- One key per call on Redis Cluster, many on a single Redis.
-- KEYS[i]  player hash  ems:player:{L|P}
-- ARGV[1]  seq
-- ARGV[2]  (optional) "stored"
local seq, stored = tonumber(ARGV[1]), ARGV[2] == 'stored'
for i = 1, #KEYS do
  local info = redis.call('HMGET', KEYS[i], 'queued_seq', 'last_seq', 'queued_prev', 'queued_older')
  local queued, last, prev = tonumber(info[1] or '0'), tonumber(info[2] or '0'), tonumber(info[3] or '0')
  if seq > queued and (stored or queued <= last) then  -- the usual case: nothing else is waited for
    redis.call('HSET', KEYS[i], 'queued_seq', ARGV[1])
    if info[3] then redis.call('HDEL', KEYS[i], 'queued_prev', 'queued_older') end
  elseif seq > queued then  -- in order: the newest moves down to queued_prev, queued_prev to the older ones
    if prev > last then
      local older = info[4] and (info[4] .. ' ' .. info[3]) or info[3]
      while tonumber(string.match(older, '^%d+')) <= last do  -- the oldest, applied since: dropped
        older = string.sub(older, string.find(older, ' ', 1, true) + 1)
      end
      redis.call('HSET', KEYS[i], 'queued_seq', ARGV[1], 'queued_prev', info[1], 'queued_older', older)
    else
      redis.call('HSET', KEYS[i], 'queued_seq', ARGV[1], 'queued_prev', info[1])
      if info[4] then redis.call('HDEL', KEYS[i], 'queued_older') end
    end
  elseif seq < queued and seq > last and (stored or seq ~= prev) then  -- below the newest: inserted in order
    local floor = stored and seq or last
    local marks = {}
    for word in string.gmatch(table.concat({info[3] or '', info[4] or ''}, ' '), '%d+') do
      local mark = tonumber(word)
      if mark > floor and mark ~= seq then marks[#marks + 1] = mark end
    end
    marks[#marks + 1] = seq
    table.sort(marks)
    redis.call('HSET', KEYS[i], 'queued_prev', marks[#marks])
    if #marks > 1 then
      redis.call('HSET', KEYS[i], 'queued_older', table.concat(marks, ' ', 1, #marks - 1))
    elseif info[4] then
      redis.call('HDEL', KEYS[i], 'queued_older')
    end
  elseif stored and seq == queued and info[3] then  -- a mark confirmed stored: nothing below it is waited for
    redis.call('HDEL', KEYS[i], 'queued_prev', 'queued_older')
  end
end
return #KEYS
