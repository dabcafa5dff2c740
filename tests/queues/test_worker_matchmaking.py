"""Matchmaking in real workers (real broker and Redis): a duel queue end to end (tickets in,
matches out, rounds published with round_id = match_id, ratings updated, players released and
matched again), duplicates and bad tickets, cancels and timeouts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

import mm_harness as mm
import pipeline_harness as harness
from stream.contracts import validate
from stream.pipeline.topics import ensure
from stream.settings import Settings
from stream.store import keys

pytestmark = pytest.mark.integration

PLAYERS = [f"p{i:02d}" for i in range(24)]


def test_duel_queue_closed_loop(local_stack, stack_redis_url: str, fresh_prefix: str, tmp_path: Path) -> None:
    env = mm.env(local_stack.bootstrap, stack_redis_url, fresh_prefix, tmp_path, queues_json=mm.duel_queues())
    ensure(Settings.from_env(env))
    workers = [harness.Worker(env, tmp_path / "worker.log").start()]
    tickets_topic, matches_topic = f"{fresh_prefix}match-tickets", f"{fresh_prefix}matches"
    events_topic, dlq_topic = f"{fresh_prefix}ticket-events", f"{fresh_prefix}match-tickets-dlq"
    try:
        first = mm.joins("a-", PLAYERS)
        bad = [b"not json", json.dumps({"ticket_id": "x", "queue": "nope", "players": ["z"]}).encode(),
               json.dumps({"ticket_id": "y", "queue": mm.DUEL, "players": ["q1", "q2"]}).encode()]
        mm.publish(local_stack.bootstrap, tickets_topic, [*first, *first[:4], *bad])  # 4 duplicates
        mm.wait_for(lambda: len(mm.distinct_matches(mm.read_json(local_stack.bootstrap, matches_topic))) == 12,
                    "12 duels", workers)
        matches = mm.distinct_matches(mm.read_json(local_stack.bootstrap, matches_topic))
        mm.assert_no_double_booking(matches)
        assert {t for m in matches.values() for t in m["tickets"]} == {t["ticket_id"] for t in first}
        for m in matches.values():
            validate("match", m)
            assert m["ladder"] == mm.DUEL and len(m["teams"]) == 2 and len(m["win_probability"]) == 2
        letters = mm.read_json(local_stack.bootstrap, dlq_topic)
        assert sorted(letter["reason"] for letter in letters) == ["bad_party", "not_json", "unknown_queue"]
        # a second join while in match is rejected; the rounds of the matches rate them and release them
        mm.publish(local_stack.bootstrap, tickets_topic, mm.joins("b-", PLAYERS[:2]))
        rounds = [{"round_id": mid, "ladder": mm.DUEL, "occurred_at": 1_700_000_000 + i,
                   "standings": [{"player": m["teams"][0][0], "rank": 1}, {"player": m["teams"][1][0], "rank": 2}]}
                  for i, (mid, m) in enumerate(sorted(matches.items()))]
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", rounds)
        harness.wait_drained(stack_redis_url, harness.expected_rounds(rounds), workers)
        client = redis.Redis.from_url(stack_redis_url)
        mm.wait_for(lambda: client.zcard(keys.mm_live(mm.DUEL)) == 0, "players released", workers)
        assert set(client.hgetall(keys.mm_outcomes(mm.DUEL))) == {mid.encode() for mid in matches}
        winners = [m["teams"][0][0] for m in matches.values()]
        mus = [float(client.hget(keys.player(mm.DUEL, p), "mu")) for p in winners]
        losers = [float(client.hget(keys.player(mm.DUEL, m["teams"][1][0]), "mu")) for m in matches.values()]
        assert min(mus) > max(losers)  # ratings updated by the matches' rounds
        second = mm.joins("c-", PLAYERS)
        mm.publish(local_stack.bootstrap, tickets_topic, second)
        mm.wait_for(lambda: len(mm.distinct_matches(mm.read_json(local_stack.bootstrap, matches_topic))) == 24,
                    "12 more duels", workers)
        events = mm.read_json(local_stack.bootstrap, events_topic)
        for e in events:
            validate("ticket-event", e)
        by_ticket: dict[str, set[str]] = {}
        for e in events:
            by_ticket.setdefault(e["ticket_id"], set()).add(e["status"])
        assert all(by_ticket[t["ticket_id"]] == {"searching", "matched"} for t in first + second)
        rejected = [e for e in events if e["ticket_id"].startswith("b-")]
        assert rejected and all(e["status"] == "rejected" and e["reason"] == "in_match" for e in rejected)
        # winners now meet winners: the second round of matches is formed on the updated ratings
        again = mm.distinct_matches(mm.read_json(local_stack.bootstrap, matches_topic))
        mm.assert_no_double_booking({k: v for k, v in again.items() if k not in matches})
    finally:
        for w in workers:
            w.stop()


def test_cancel_and_timeout(local_stack, stack_redis_url: str, fresh_prefix: str, tmp_path: Path) -> None:
    queues = mm.queues(duel={"ladder": mm.DUEL, "teams": 2, "team_size": 1, "tick_interval_s": 0.2,
                             "max_wait_s": 2.0, "widening": [{"after_s": 0, "max_gap": 1, "min_quality": 0.99}]})
    env = mm.env(local_stack.bootstrap, stack_redis_url, fresh_prefix, tmp_path, queues_json=queues)
    ensure(Settings.from_env(env))
    client = redis.Redis.from_url(stack_redis_url)
    # two far apart players never match (gap 1, quality 0.99): one is cancelled, the other times out
    client.hset(keys.player(mm.DUEL, "low"), mapping={"mu": "1000.0", "sigma": "80.0"})
    client.hset(keys.player(mm.DUEL, "high"), mapping={"mu": "2500.0", "sigma": "80.0"})
    workers = [harness.Worker(env, tmp_path / "worker.log").start()]
    tickets_topic, events_topic = f"{fresh_prefix}match-tickets", f"{fresh_prefix}ticket-events"
    try:
        mm.publish(local_stack.bootstrap, tickets_topic, mm.joins("t-", ["low", "high"]) +
                   [{"ticket_id": "t-low", "queue": mm.DUEL, "cancel": True}])
        mm.wait_for(lambda: {(e["ticket_id"], e["status"]) for e in mm.read_json(local_stack.bootstrap, events_topic)}
                    >= {("t-low", "cancelled"), ("t-high", "timed_out")}, "cancel and timeout", workers)
        mm.publish(local_stack.bootstrap, tickets_topic, [{"ticket_id": "t-high", "queue": mm.DUEL, "cancel": True}])
        mm.wait_for(lambda: ("t-high", "too_late") in {(e["ticket_id"], e["status"]) for e in
                                                       mm.read_json(local_stack.bootstrap, events_topic)},
                    "a too-late cancel", workers)
        assert client.hlen(keys.mm_pool(mm.DUEL)) == 0 and client.hlen(keys.mm_waiting(mm.DUEL)) == 0
        timed = [e for e in mm.read_json(local_stack.bootstrap, events_topic) if e["status"] == "timed_out"]
        assert timed[0]["wait"] >= 2.0
        assert mm.read_json(local_stack.bootstrap, f"{fresh_prefix}matches") == []
    finally:
        for w in workers:
            w.stop()
