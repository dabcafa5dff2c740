-- queue_rounds: phase one's last write of a batch's rounds on a single Redis (Store.queue_batch) in
-- one atomic call: per round, in order, save_fanout.lua on the round, then, if it stored the
-- fan-out now, mark_queued.lua on its players (both included below, each run on its own KEYS and
-- ARGV): a round is never marked without its fan-out, and a round save_fanout.lua refuses (an
-- earlier round of its ladder still registered, or the batch's chain lost: see there) or fences
-- (the writer's lease token is stale) marks nobody.
-- Its keys span hash slots: never sent to a Redis Cluster (there the two scripts are called on
-- their own, every mark first).
-- KEYS: per round: its n player hashes (mark_queued.lua's KEYS), then save_fanout.lua's k KEYS
-- ARGV: per round: n, k, m, seq (mark_queued.lua's ARGV), then save_fanout.lua's m ARGV
-- Returns per round save_fanout.lua's reply (1 stored now, 0 stored before, -1 refused, -2 fenced).
local mark_queued = function(KEYS, ARGV)
--@include mark_queued
end

local save_fanout = function(KEYS, ARGV)
--@include save_fanout
end

-- KEYS or ARGV [first .. first + n - 1] as a table of its own (a loop: a big round passes unpack's limit).
local function slice(from, first, n)
  local out = {}
  for i = 1, n do
    out[i] = from[first + i - 1]
  end
  return out
end

local out = {}
local k, a = 1, 1
while a <= #ARGV do
  local n, f, m = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local saved = save_fanout(slice(KEYS, k + n, f), slice(ARGV, a + 4, m))
  if saved == 1 then
    mark_queued(slice(KEYS, k, n), {ARGV[a + 3], 'stored'})
  end
  out[#out + 1] = saved
  k = k + n + f
  a = a + 4 + m
end
return out
