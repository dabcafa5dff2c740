-- mm_apply: a batch of joins and cancels of one queue, in the order given, in one call (the tickets
-- agent's consumed batch: one call per queue, not one per ticket). Each op runs mm_join.lua or
-- mm_cancel.lua (included below as functions, each on its own ARGV), so a batch equals its ops
-- applied one by one.
-- One slot: every key of queue {q:Q}.
-- KEYS: keys.mm_keys(Q) (see mm_join.lua)
-- ARGV: per op: kind ('join' or 'cancel'), n, then that script's n ARGV
-- Returns per op that script's reply.
local join = function(KEYS, ARGV)
--@include mm_join
end

local cancel = function(KEYS, ARGV)
--@include mm_cancel
end

local out = {}
local a = 1
while a <= #ARGV do
  local kind, n = ARGV[a], tonumber(ARGV[a + 1])
  local args = {}
  for i = 1, n do
    args[i] = ARGV[a + 1 + i]
  end
  if kind == 'join' then
    out[#out + 1] = join(KEYS, args)
  else
    out[#out + 1] = cancel(KEYS, args)
  end
  a = a + 2 + n
end
return out
