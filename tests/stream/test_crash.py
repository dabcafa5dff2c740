"""A worker killed (SIGKILL) mid-stream and replaced: Redis still equals replay, no event lost."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path

import pytest
import redis

import pipeline_harness as harness
from stream import engine
from stream.contracts import validate
from stream.pipeline.topics import ensure
from stream.settings import Settings
from stream.store import keys

pytestmark = pytest.mark.integration

ROUNDS = 1000
KILL_AFTER_RATED = 60
BATCH = "4"
"""Rounds per phase-one batch and messages per phase-two batch: small, so the rated count climbs a
few rounds at a time and the kill lands mid-stream (with the default batches, rounds queued while
the workers joined were rated in a few large batches, once all of them between two polls)."""


def rated_count(client: redis.Redis, ladders: tuple[str, ...]) -> int:
    return sum(int(client.hget(keys.ladder(ladder), "rounds_rated") or 0) for ladder in ladders)


def test_killed_worker_is_replaced_and_the_result_is_unchanged(local_stack, stack_redis_url: str, fresh_prefix: str,
                                                               tmp_path: Path) -> None:
    ladders = ("alpha", "beta")
    rounds = harness.synthetic_rounds(seed=11, count=ROUNDS, ladders=ladders, pool=30)
    env = harness.worker_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, PHASE_ONE_BATCH=BATCH,
                             PHASE_TWO_BATCH=BATCH)
    ensure(Settings.from_env(env))
    workers = [harness.Worker(env, tmp_path / f"worker{i}.log").start() for i in range(2)]
    client = redis.Redis.from_url(stack_redis_url)
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", rounds)
        deadline = time.monotonic() + harness.DRAIN_TIMEOUT_S
        while rated_count(client, ladders) < KILL_AFTER_RATED:
            assert time.monotonic() < deadline, workers[0].log()
            time.sleep(0.01)
        assert workers[0].process is not None
        workers[0].process.kill()
        workers[0].process.wait()
        assert rated_count(client, ladders) < ROUNDS, "the stream drained before the crash: nothing was tested"
        replacement = harness.Worker(env, tmp_path / "worker2.log").start()
        harness.wait_drained(stack_redis_url, harness.expected_rounds(rounds), [workers[1], replacement])
        participations = sum(len(r["standings"]) for r in rounds)
        events = harness.consume_all(local_stack.bootstrap, f"{fresh_prefix}rating-changes", at_least=participations,
                                     distinct=True)
        workers.append(replacement)
    finally:
        client.close()
        harness.stop_workers(workers)
    harness.assert_equals_reference(stack_redis_url, harness.reference(rounds, engine.preset("mmr")))
    by_id: dict[str, set[bytes]] = defaultdict(set)
    for _, value in events:
        validate("rating-change", value)
        by_id[json.loads(value)["event_id"]].add(value)
    assert set(by_id) == {f"{r['ladder']}/{r['round_id']}/{s['player']}" for r in rounds for s in r["standings"]}
    assert all(len(contents) == 1 for contents in by_id.values())
