-- mark_queued: record that round seq is rated for each player (the per-player barrier).
-- A player's marks are the rounds phase one rated for him that phase two has not applied yet
-- (each above last_seq): queued_seq is the newest (monotonic: never goes down), queued_prev the
-- next newest, queued_older the others, newest first, space-separated (rare: three or more).
-- Phase one marks a batch's rounds before any of them is applied, and on Redis Cluster before
-- their fan-outs are stored, so an attempt that crashed or was fenced can leave marks of rounds
-- still to rate; the next attempt at round s waits for the newest mark below s (Store.priors):
-- while s is registered no later round of its ladder is stored (save_fanout.lua), so a mark at or
-- above s is such a leftover, and the player's previous round is the newest mark below s.
-- A mark at or below last_seq (that round is applied for the player) is dropped here.
-- One key per call on Redis Cluster, many on a single Redis.
-- KEYS[i]  player hash  ems:player:{L|P}
-- ARGV[1]  seq
local seq = tonumber(ARGV[1])
for i = 1, #KEYS do
  local info = redis.call('HMGET', KEYS[i], 'queued_seq', 'last_seq', 'queued_prev', 'queued_older')
  local queued, last = tonumber(info[1] or '0'), tonumber(info[2] or '0')
  if seq > queued and queued <= last and not info[3] then
    redis.call('HSET', KEYS[i], 'queued_seq', ARGV[1])  -- the usual case: nothing else unapplied
  elseif seq ~= queued and seq ~= tonumber(info[3] or '0') then
    local marks = {}  -- the unapplied ones, this one included, newest first
    for _, mark in ipairs({seq, queued, tonumber(info[3] or '0')}) do
      if mark > last then marks[#marks + 1] = mark end
    end
    for text in string.gmatch(info[4] or '', '%d+') do
      local mark = tonumber(text)
      if mark > last and mark ~= seq then marks[#marks + 1] = mark end
    end
    table.sort(marks, function(a, b) return a > b end)
    redis.call('HSET', KEYS[i], 'queued_seq', math.max(seq, queued))
    if marks[2] then
      redis.call('HSET', KEYS[i], 'queued_prev', marks[2])
    else
      redis.call('HDEL', KEYS[i], 'queued_prev')
    end
    if marks[3] then
      redis.call('HSET', KEYS[i], 'queued_older', table.concat(marks, ' ', 3))
    elseif info[4] then
      redis.call('HDEL', KEYS[i], 'queued_older')
    end
  end
end
return #KEYS
