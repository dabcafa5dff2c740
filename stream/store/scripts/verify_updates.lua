-- verify_updates: which of phase two's incoming PlayerUpdate sections of one or more rounds of one
-- ladder are exactly sections phase one stored for their round (its fan-out), so a forged or
-- altered one on the internal player-updates topic (another seq, performance, player, weight...)
-- is never applied.
-- The fan-out is written once, with the round's move from "registered" to "pending" (save_fanout),
-- and changed after only by a correction's re-rate, which holds the ladder and waits until its
-- rounds are rated and their events confirmed (it deletes the digest set with the fan-out it
-- rewrites); so a section verified here still matches when phase two applies it. A section of a
-- re-rated round redelivered after the re-rate no longer verifies (and a "voided" round's never):
-- stale, it is dead-lettered, not applied.
-- One slot: keys of ladder {L}.
-- Per round r (r = 1, 2, ...):
-- KEYS[3r - 2] round record           ems:round:{L}:R
-- KEYS[3r - 1] stored fan-out (hash)  ems:round-perf:{L}:R
-- KEYS[3r]     fan-out digests (set)  ems:round-digests:{L}:R  (SHA-1 hex of each stored section;
--                                      not used for a round of at most SMALL players)
-- ARGV: per round, in KEYS order: count, kind, then count items: the incoming sections' SHA-1 hex
--   digests (kind "sha1"), or the sections themselves (kind "raw": the caller's choice for a round
--   it takes for a small one, saving both sides the hashing; any kind checks any round right)
-- Returns per item (ARGV order) 1 if it is one of the round's stored sections, else 0 (also while
-- the round has no fan-out: unknown, "registered" or "no_outcome"). A "failed" round's stored
-- sections still verify: phase two must handle them (apply, or dead-letter and release their
-- players) for the ladder to move on.

-- A round of at most SMALL players (a few sections: a duel's one or two, a lobby's few) is checked
-- against its stored sections directly (raw items as they are, digests against the stored ones
-- hashed here);
-- a bigger one's digests are kept in its digest set, built on its first check (its sections are
-- checked over many batches).
local SMALL = 10

-- Flags of the round's items ARGV[first .. first + count - 1] (raw: sections, else digests).
local function verify(round_key, perf_key, digest_key, first, count, raw)
  local info = redis.call('HMGET', round_key, 'status', 'field_size')
  local status = info[1]
  if status ~= 'pending' and status ~= 'rated' and status ~= 'failed' then
    local out = {}
    for i = 1, count do out[i] = 0 end
    return out
  end
  if tonumber(info[2] or '0') <= SMALL then
    local stored = {}
    for _, message in ipairs(redis.call('HVALS', perf_key)) do
      stored[raw and message or redis.sha1hex(message)] = true
    end
    local out = {}
    for i = 1, count do
      out[i] = stored[ARGV[first + i - 1]] and 1 or 0
    end
    return out
  end
  if redis.call('EXISTS', digest_key) == 0 then
    local digests = {}
    for _, message in ipairs(redis.call('HVALS', perf_key)) do
      digests[#digests + 1] = redis.sha1hex(message)
    end
    for i = 1, #digests, 5000 do
      redis.call('SADD', digest_key, unpack(digests, i, math.min(i + 4999, #digests)))
    end
  end
  if raw then
    local digests = {}
    for i = 1, count do
      digests[i] = redis.sha1hex(ARGV[first + i - 1])
    end
    return redis.call('SMISMEMBER', digest_key, unpack(digests))
  end
  return redis.call('SMISMEMBER', digest_key, unpack(ARGV, first, first + count - 1))
end

local out = {}
local a = 1
for r = 1, #KEYS / 3 do
  local count = tonumber(ARGV[a])
  for _, flag in ipairs(verify(KEYS[3 * r - 2], KEYS[3 * r - 1], KEYS[3 * r], a + 2, count, ARGV[a + 1] == 'raw')) do
    out[#out + 1] = flag
  end
  a = a + 2 + count
end
return out
