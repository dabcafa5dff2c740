"""A worker crashes (os._exit(137), what kill -9 does at that instant) at each step of the
matchmaking path, once, and is restarted: no ticket is lost (every ticket ends in exactly one
match), no player is booked twice, no match is emitted under two ids, and the outbox drains."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis

import fault_harness as faults_h
import mm_harness as mm
import pipeline_harness as harness
from stream.pipeline.topics import ensure
from stream.settings import Settings
from stream.store import keys

pytestmark = pytest.mark.integration

PLAYERS = [f"k{i:03d}" for i in range(60)]


def supervise(workers: list[harness.Worker], condition, what: str, timeout_s: float = 240.0) -> int:
    """Restart a worker that exits with the fault's status until ``condition()``; how many crashed."""
    crashes = 0
    deadline = time.monotonic() + timeout_s
    while not condition():
        crashes = faults_h.tend(workers, restart=True, crashes=crashes)
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}\n" + "\n".join(w.log() for w in workers))
        time.sleep(0.5)
    return crashes


@pytest.mark.parametrize("point", faults_h.MM_CRASH_POINTS)
def test_crash_at_each_step_of_a_tick(point: str, local_stack, stack_redis_url: str, fresh_prefix: str,
                                      tmp_path: Path) -> None:
    env = mm.env(local_stack.bootstrap, stack_redis_url, fresh_prefix, tmp_path, point,
                 queues_json=mm.duel_queues(tick_s=0.3))
    ensure(Settings.from_env(env))
    workers = [harness.Worker(env, tmp_path / "worker.log").start()]
    tickets = mm.joins("f-", PLAYERS)
    matches_topic = f"{fresh_prefix}matches"

    client = redis.Redis.from_url(stack_redis_url)

    def settled() -> bool:
        """Every ticket matched and nothing left to send, after the fault fired."""
        if not (tmp_path / "fault.marker").exists() or client.hlen(keys.mm_outbox(mm.DUEL)):
            return False
        found = mm.distinct_matches(mm.read_json(local_stack.bootstrap, matches_topic))
        return sum(len(m["tickets"]) for m in found.values()) >= len(tickets)

    try:
        # in two halves: the second half arrives after the first ticks (a crash then meets later ones too)
        mm.publish(local_stack.bootstrap, f"{fresh_prefix}match-tickets", tickets[:30])
        time.sleep(1.0)
        mm.publish(local_stack.bootstrap, f"{fresh_prefix}match-tickets", tickets[30:])
        crashes = supervise(workers, settled, "the fault, every ticket matched and the outbox drained")
        assert crashes == 1, f"expected one crash at {point}, saw {crashes}"
        found = mm.distinct_matches(mm.read_json(local_stack.bootstrap, matches_topic))
        mm.assert_no_double_booking(found)  # no ticket in two matches, no player booked twice
        assert sorted(t for m in found.values() for t in m["tickets"]) == sorted(t["ticket_id"] for t in tickets)
        assert client.hlen(keys.mm_pool(mm.DUEL)) == 0 and client.hlen(keys.mm_waiting(mm.DUEL)) == 0
        assert client.zcard(keys.mm_live(mm.DUEL)) == len(found)  # every matched player is in match
        statuses = mm.read_json(local_stack.bootstrap, f"{fresh_prefix}ticket-events")
        matched = {e["ticket_id"]: e["match_id"] for e in statuses if e["status"] == "matched"}
        assert set(matched) == {t["ticket_id"] for t in tickets}
        assert all(t in found[mid]["tickets"] for t, mid in matched.items())
    finally:
        for w in workers:
            w.stop()


def test_two_workers_one_killed_mid_stream(local_stack, stack_redis_url: str, fresh_prefix: str,
                                            tmp_path: Path) -> None:
    """Two workers tick four queues; one is SIGKILLed while tickets stream in; the survivor takes its
    queues over: every ticket still ends in exactly one match, no player booked twice."""
    entries = {f"q{i}": {"ladder": f"l{i}", "teams": 2, "team_size": 1, "tick_interval_s": 0.3, "widening": mm.OPEN}
               for i in range(4)}
    env = mm.env(local_stack.bootstrap, stack_redis_url, fresh_prefix, tmp_path, queues_json=mm.queues(**entries))
    ensure(Settings.from_env(env))
    workers = [harness.Worker(env, tmp_path / f"w{i}.log").start() for i in range(2)]
    tickets = [t for q in entries for t in mm.joins(f"{q}-", [f"{q}p{i:02d}" for i in range(30)], queue=q)]
    matches_topic = f"{fresh_prefix}matches"
    client = redis.Redis.from_url(stack_redis_url)
    try:
        time.sleep(8)  # both in the group
        mm.publish(local_stack.bootstrap, f"{fresh_prefix}match-tickets", tickets[::2])
        time.sleep(1.5)
        workers[0].process.kill()  # SIGKILL: whatever it was doing
        workers[0].process.wait()
        mm.publish(local_stack.bootstrap, f"{fresh_prefix}match-tickets", tickets[1::2])

        def settled() -> bool:
            if any(client.hlen(keys.mm_outbox(q)) for q in entries):
                return False
            found = mm.distinct_matches(mm.read_json(local_stack.bootstrap, matches_topic))
            return sum(len(m["tickets"]) for m in found.values()) >= len(tickets)

        mm.wait_for(settled, "every ticket matched after the kill", workers[1:])
        found = mm.distinct_matches(mm.read_json(local_stack.bootstrap, matches_topic))
        mm.assert_no_double_booking(found)
        assert sorted(t for m in found.values() for t in m["tickets"]) == sorted(t["ticket_id"] for t in tickets)
        assert all(len({t.split("-")[0] for t in m["tickets"]}) == 1 for m in found.values())  # one queue per match
        assert all(client.hlen(keys.mm_pool(q)) == 0 for q in entries)
    finally:
        for w in workers:
            w.stop()
