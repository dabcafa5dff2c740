-- schedule_season: add a season start to a ladder's schedule of record, unless a round at or after
-- it is already registered to rate (then the stream and `stream replay` could disagree).
-- One slot: both keys carry the ladder's hash tag {L}.
-- KEYS[1] ladder hash            ems:ladder:{L}   (field "occurred_max": the newest occurred_at registered;
--                                 written: "schedule_version", the seasons of record added so far, and
--                                 "season_start:<v>", the start of the v-th: register_round.lua refuses a
--                                 round at or after a start the registering worker has not read)
-- KEYS[2] schedule (list)        ems:season_schedule:{L}   (one JSON {"name", "start", "centre"?} each,
--                                 kept as written: never re-encoded, so a start keeps every digit)
-- ARGV[1] the entry's JSON ({"name", "start" epoch seconds, "centre"?})
-- ARGV[2] its start (epoch seconds), ARGV[3] its name
-- Returns {"ok", ""}; {"late", occurred_max} when a round at or after the start is registered;
-- {"order", last start} when the schedule's last season does not start before it;
-- {"name", name} when the name is taken.
local newest = redis.call('HGET', KEYS[1], 'occurred_max')
local start = tonumber(ARGV[2])
if newest and tonumber(newest) >= start then
  return {'late', newest}
end
for _, text in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
  local entry = cjson.decode(text)
  if entry['name'] == ARGV[3] then
    return {'name', ARGV[3]}
  end
  if tonumber(entry['start']) >= start then
    return {'order', tostring(entry['start'])}
  end
end
redis.call('RPUSH', KEYS[2], ARGV[1])
local version = redis.call('HINCRBY', KEYS[1], 'schedule_version', 1)
redis.call('HSET', KEYS[1], 'season_start:' .. version, ARGV[2])
return {'ok', ''}
