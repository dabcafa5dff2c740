-- queue_rounds: phase one's last write of a batch's rounds on a single Redis (Store.queue_batch) in
-- one atomic call: per round, in order, mark_queued.lua on its players, then save_fanout.lua on the
-- round (both included below, each run on its own KEYS and ARGV): the same writes as calling them
-- one after the other, without a round ever marked without its fan-out. Its keys span hash slots:
-- never sent to a Redis Cluster (there the two scripts are called on their own).
-- KEYS: per round: its n player hashes (mark_queued.lua's KEYS), then save_fanout.lua's 4 KEYS
-- ARGV: per round: n, m, seq (mark_queued.lua's ARGV), then save_fanout.lua's m ARGV
-- Returns per round save_fanout.lua's reply (1 if its fan-out was stored now, else 0).
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
  local n, m = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  mark_queued(slice(KEYS, k, n), {ARGV[a + 2]})
  out[#out + 1] = save_fanout(slice(KEYS, k + n, 4), slice(ARGV, a + 3, m))
  k = k + n + 4
  a = a + 3 + m
end
return out
