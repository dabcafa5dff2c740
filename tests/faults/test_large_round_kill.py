"""kill -9 of the only worker in the middle of a 20,000-player round, then a restart.

Small rounds before and after share players with the large one (so later rounds wait on it
at the barrier). The worker is SIGKILLed as soon as the large round's fan-out is stored, while
its phase two runs (the round still pending; phase two rates a batch in one engine call and
writes it in one round trip, so a "some players applied" window is too short to aim at from
outside). The restarted worker finishes it: Redis equals replay, every event present.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest
import redis

import fault_harness as faults_h
import pipeline_harness as harness
from stream import engine
from stream.pipeline.topics import ensure
from stream.settings import Settings
from stream.store import keys

pytestmark = pytest.mark.integration

LARGE = 20_000
SMALL_BEFORE, SMALL_AFTER = 10, 10
FANOUT_DEADLINE_S = 120.0
"""Bound on the wait for the large round's fan-out (not a performance assertion)."""


def stream_with_a_large_round() -> list[dict]:
    rng = random.Random(17)
    players = [f"q{i:05d}" for i in range(LARGE)]
    small = harness.synthetic_rounds(seed=17, count=SMALL_BEFORE + SMALL_AFTER, ladders=("big",), pool=40)
    for r in small:  # the small rounds' players (p000..p039) are renamed into the large round's pool
        for s in r["standings"]:
            s["player"] = "q" + s["player"][1:].rjust(5, "0")
    ranks = sorted(rng.randint(1, LARGE) for _ in players)
    large = {"round_id": "large", "ladder": "big", "occurred_at": harness.BASE_TIME + (SMALL_BEFORE + 0.5) * harness.DAY_S / 4,
             "standings": [{"player": p, "rank": r} for p, r in zip(rng.sample(players, LARGE), ranks)]}
    return small[:SMALL_BEFORE] + [large] + small[SMALL_BEFORE:]


def test_kill_9_in_the_middle_of_a_large_round(local_stack, stack_redis_url: str, fresh_prefix: str,
                                               tmp_path: Path) -> None:
    rounds = stream_with_a_large_round()
    env = faults_h.fault_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, tmp_path, SWEEP_TIMEOUT_S="10")
    ensure(Settings.from_env(env))
    workers = [harness.Worker(env, tmp_path / "worker.log").start()]
    client = redis.Redis.from_url(stack_redis_url)
    record = keys.round_record("big", "large")

    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", rounds)
        deadline = time.monotonic() + FANOUT_DEADLINE_S
        while client.hget(record, "status") != b"pending":  # busy: the kill must land within phase two
            assert workers[0].process is not None and workers[0].process.poll() is None, workers[0].log()
            assert time.monotonic() < deadline, f"no fan-out stored for the large round\n{workers[0].log()}"
        assert workers[0].process is not None
        workers[0].process.kill()
        workers[0].process.wait()
        status, left = client.hget(record, "status"), int(client.hget(record, "pending") or 0)
        assert status == b"pending" and left > 0, "the round finished before the kill: nothing tested"
        workers.append(harness.Worker(env, tmp_path / "restarted.log").start())
        harness.wait_drained(stack_redis_url, harness.expected_rounds(rounds), workers[1:])
        harness.assert_equals_reference(stack_redis_url, harness.reference(rounds, engine.preset("mmr")))
        faults_h.wait_ledgers_empty(stack_redis_url, ["big"])
        faults_h.assert_events_complete(local_stack.bootstrap, fresh_prefix, rounds)
    finally:
        client.close()
        faults_h.stop_all(workers)
