-- mm_apply: a batch of joins and cancels of one queue, in the order given, in one call (the tickets
-- agent's consumed batch: one call per queue, not one per ticket). Each op runs mm_join.lua or
-- mm_cancel.lua (included below as functions, each on its own ARGV), so a batch equals its ops
-- applied one by one.
-- One slot: every key of queue {q:Q}.
-- KEYS: keys.mm_keys(Q) (see mm_join.lua)
-- ARGV: per op: kind ('join' or 'cancel'), n, then that script's n ARGV
-- Returns {version before, version after, per op that script's reply}: the pool's version (KEYS[12])
-- is bumped once if an op changed the pool (a join 'new', a cancel 'cancelled'), so a worker
-- holding a copy of the pool at the version before applies the batch's changes itself.
local join = function(KEYS, ARGV)
--@include mm_join
end

local cancel = function(KEYS, ARGV)
--@include mm_cancel
end

local out = {}
local changed = false
local a = 1
while a <= #ARGV do
  local kind, n = ARGV[a], tonumber(ARGV[a + 1])
  local args = {}
  for i = 1, n do
    args[i] = ARGV[a + 1 + i]
  end
  local reply
  if kind == 'join' then
    reply = join(KEYS, args)
    changed = changed or reply[1] == 'new'
  else
    reply = cancel(KEYS, args)
    changed = changed or reply[1] == 'cancelled'
  end
  out[#out + 1] = reply
  a = a + 2 + n
end
local before = tonumber(redis.call('GET', KEYS[12]) or '0')
local after = before
if changed then
  after = redis.call('INCR', KEYS[12])
end
return {before, after, out}
