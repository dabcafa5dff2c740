-- trim_history: drop the entries of rating histories that are older than a cutoff (retention by
-- age, RETAIN_HISTORY_DAYS): entries are oldest first, so it pops from the head while the first
-- entry's occurred_at is before the cutoff.
-- One key per call on Redis Cluster, many on a single Redis.
-- KEYS[i]  rating history (list)  ems:history:{L|P}
-- ARGV[1]  cutoff                 epoch seconds
-- Returns the number of entries dropped.
local cutoff = tonumber(ARGV[1])
local dropped = 0
for i = 1, #KEYS do
  while true do
    local first = redis.call('LINDEX', KEYS[i], 0)
    if not first then break end
    local ok, entry = pcall(cjson.decode, first)
    if not ok or type(entry) ~= 'table' or type(entry.occurred_at) ~= 'number' or entry.occurred_at >= cutoff then
      break
    end
    redis.call('LPOP', KEYS[i])
    dropped = dropped + 1
  end
end
return dropped
