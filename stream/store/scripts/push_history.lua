-- push_history: append rating-history entries to many players' lists and keep each list's last
-- history_length entries (stream backfill: what apply_player_update.lua does one round at a time).
-- One key per call on Redis Cluster, many on a single Redis.
-- KEYS[i]  rating history (list)  ems:history:{L|P}
-- ARGV[1]  history_length
-- then per key, in KEYS order: n (entries), then its n entries (RatingChange JSON, oldest first)
-- Returns the number of entries appended.
local history_length = tonumber(ARGV[1])
local a, total = 2, 0
for i = 1, #KEYS do
  local n = tonumber(ARGV[a])
  for first = a + 1, a + n, 1000 do  -- Lua's unpack limit
    local last = math.min(first + 999, a + n)
    if redis.call('RPUSH', KEYS[i], unpack(ARGV, first, last)) > history_length then
      redis.call('LTRIM', KEYS[i], -history_length, -1)
    end
  end
  a = a + n + 1
  total = total + n
end
return total
