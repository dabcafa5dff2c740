-- mm_unpool: not a script of its own; included (--@include mm_unpool) by mm_cancel.lua and
-- mm_commit.lua. unpool(pool, waiting, tid): ticket tid leaves the pool, and each of its players
-- leaves the waiting index if still waiting on it; returns its decoded pool record, or nil (not in
-- the pool: nothing done).
local function unpool(pool, waiting, tid)
  local rec = redis.call('HGET', pool, tid)
  if not rec then
    return nil
  end
  local r = cjson.decode(rec)
  redis.call('HDEL', pool, tid)
  for _, p in ipairs(r.players) do
    if redis.call('HGET', waiting, p) == tid then
      redis.call('HDEL', waiting, p)
    end
  end
  return r
end
