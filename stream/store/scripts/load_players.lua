-- load_players: HMGET the same fields of many player hashes in one call (read only), returned
-- as one reply per field: numbers as ONE text (the client took thousands of small replies apart
-- more slowly than Redis sent them), bytes as an array (concatenating large values in Lua cost
-- more than sending them apart).
-- One key per call on Redis Cluster, many on a single Redis.
-- KEYS[i]  player hash  ems:player:{L|P}
-- ARGV[j]  a field: "#name" for a number (its reply: the values space-separated, "nan" where
--          absent), "name" for bytes (its reply: the values in KEYS order, nil where absent)
-- Returns the replies in ARGV order.
local names, numeric, columns = {}, {}, {}
for j = 1, #ARGV do
  numeric[j] = string.byte(ARGV[j], 1) == 35  -- '#'
  names[j] = numeric[j] and string.sub(ARGV[j], 2) or ARGV[j]
  columns[j] = {}
end
for i = 1, #KEYS do
  local row = redis.call('HMGET', KEYS[i], unpack(names))
  for j = 1, #names do
    if numeric[j] then
      columns[j][i] = row[j] or 'nan'
    else
      columns[j][i] = row[j]
    end
  end
end
for j = 1, #names do
  if numeric[j] then
    columns[j] = table.concat(columns[j], ' ')
  end
end
return columns
