-- hset_many: set the same fields of many hashes in one call (stream backfill and import write
-- players' final states: the fields apply_player_update.lua and mark_queued.lua set).
-- One key per call on Redis Cluster, many on a single Redis.
-- KEYS[i]  a hash (e.g. ems:player:{L|P})
-- ARGV[1]  F, the number of fields;  ARGV[2 .. F+1] the field names
-- then F values per key, in KEYS order
-- Returns the number of hashes written.
local f = tonumber(ARGV[1])
local args = {}
for i = 1, #KEYS do
  local base = 1 + f + f * (i - 1)
  for j = 1, f do
    args[2 * j - 1] = ARGV[1 + j]
    args[2 * j] = ARGV[base + j]
  end
  redis.call('HSET', KEYS[i], unpack(args))
end
return #KEYS
