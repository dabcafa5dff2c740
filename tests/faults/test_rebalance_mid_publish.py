"""Consumer-group rebalances while rounds are being published and rated: a second worker joins,
and later leaves (SIGTERM), while the stream is published in slices and the first worker rates a
backlog. Every round is rated exactly as replay rates it (nothing lost: no offset committed for a
round nobody handled, no event acknowledged that was skipped during a rebalance), every event
present, the ledgers empty."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

import fault_harness as faults_h
import pipeline_harness as harness
from stream import engine
from stream.pipeline.topics import ensure
from stream.settings import Settings

pytestmark = pytest.mark.integration

LADDERS = ("alpha", "beta", "gamma", "delta")
ROUNDS = 10_000
RESERVE = 3_000
"""The last rounds, published at once right before the second worker leaves (its backlog: more
than two workers rate between the publish and the leave)."""
SLICE = 100
SLICE_PAUSE_S = 0.3
BACKLOG = 400
ASSIGNED = "Executing _on_partitions_assigned"
"""Faust's INFO line of each partition assignment a worker takes part in."""


def assignments(worker: harness.Worker) -> int:
    return worker.log_path.read_text(errors="replace").count(ASSIGNED)


def unrated(redis_url: str, rounds: list[dict]) -> int:
    client = redis.Redis.from_url(redis_url)
    try:
        statuses = faults_h.statuses(client, harness.expected_rounds(rounds))
        return sum(s not in (b"rated", b"no_outcome") for s in statuses.values())
    finally:
        client.close()


def test_workers_joining_and_leaving_mid_publish_lose_nothing(local_stack, stack_redis_url: str,
                                                             fresh_prefix: str, tmp_path: Path) -> None:
    rounds = harness.synthetic_rounds(seed=41, count=ROUNDS, ladders=LADDERS, pool=60, max_size=3)
    env = faults_h.fault_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, tmp_path, LOG_LEVEL="info")
    ensure(Settings.from_env(env))
    topic = f"{fresh_prefix}rounds"
    first = harness.Worker(env, tmp_path / "first.log").start()
    second = harness.Worker(env, tmp_path / "second.log")
    workers = [first, second]
    slices: Iterator[list[dict]] = (rounds[i:i + SLICE] for i in range(0, ROUNDS - RESERVE, SLICE))
    published: list[dict] = []

    def publish_slice() -> None:
        """The next slice, once the backlog is below BACKLOG (a slow join does not use up the stream)."""
        if unrated(stack_redis_url, published) < BACKLOG:
            chunk = next(slices, [])
            assert chunk, "every round was published before the rebalances happened"
            harness.publish(local_stack.bootstrap, topic, chunk)
            published.extend(chunk)
        time.sleep(SLICE_PAUSE_S)

    try:
        faults_h.wait_until(lambda: assignments(first) >= 1, "the first worker's assignment", logs=first.log)
        for _ in range(10):
            publish_slice()
        second.start()  # joins while slices keep coming: a rebalance mid-publish
        while assignments(second) < 1:
            assert second.process is not None and second.process.poll() is None, second.log()
            publish_slice()
        published_at_join = len(published)
        for _ in range(10):
            publish_slice()
        for chunk in slices:  # the rest of the stream, then the reserve: a backlog for the leave
            harness.publish(local_stack.bootstrap, topic, chunk)
            published.extend(chunk)
        harness.publish(local_stack.bootstrap, topic, rounds[ROUNDS - RESERVE:])
        published.extend(rounds[ROUNDS - RESERVE:])
        backlog_at_leave = unrated(stack_redis_url, published)
        joined = assignments(first)
        second.stop()  # leaves: the first worker takes every partition back
        harness.wait_drained(stack_redis_url, harness.expected_rounds(rounds), [first])
        harness.assert_equals_reference(stack_redis_url, harness.reference(rounds, engine.preset("mmr")))
        faults_h.wait_ledgers_empty(stack_redis_url, list(LADDERS))
        faults_h.assert_events_complete(local_stack.bootstrap, fresh_prefix, rounds)
        assert assignments(first) > joined >= 2, "the first worker saw both rebalances"
        assert 0 < published_at_join < ROUNDS - RESERVE, "the join fell outside the publishing"
        assert backlog_at_leave > 0, "the leave fell outside the stream"
    finally:
        faults_h.stop_all(workers)
