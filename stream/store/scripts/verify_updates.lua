-- verify_updates: which of phase two's incoming PlayerUpdate messages of one round are exactly
-- messages phase one stored for it (its fan-out), so a forged or altered message on the internal
-- player-updates topic (another seq, performance, player, weight...) is never applied.
-- The fan-out is written once, with the round's move from "registered" to "pending" (save_fanout),
-- and changed after only by a correction's re-rate, which holds the ladder and waits until its
-- rounds are rated and their events confirmed (it deletes the digest set with the fan-out it
-- rewrites); so a message verified here still matches when phase two applies it. A message of a
-- re-rated round redelivered after the re-rate no longer verifies (and a "voided" round's never):
-- stale, it is dead-lettered, not applied.
-- One slot: keys of ladder {L}.
-- KEYS[1] round record           ems:round:{L}:R
-- KEYS[2] stored fan-out (hash)  ems:round-perf:{L}:R
-- KEYS[3] fan-out digests (set)  ems:round-digests:{L}:R  (SHA-1 hex of each stored message)
-- ARGV[1..] SHA-1 hex of each incoming message
-- Returns per message 1 if it is one of the stored messages, else 0 (also while the round has no
-- fan-out: unknown, "registered" or "no_outcome"). A "failed" round's stored messages still verify:
-- phase two must handle them (apply, or dead-letter and release their players) for the ladder to
-- move on.
local round_key, perf_key, digest_key = KEYS[1], KEYS[2], KEYS[3]
local status = redis.call('HGET', round_key, 'status')
if status ~= 'pending' and status ~= 'rated' and status ~= 'failed' then
  local out = {}
  for i = 1, #ARGV do out[i] = 0 end
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
return redis.call('SMISMEMBER', digest_key, unpack(ARGV))
