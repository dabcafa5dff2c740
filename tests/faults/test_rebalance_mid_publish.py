"""Consumer-group rebalances while rounds are being published and rated: a second worker joins
(and later leaves, SIGTERM) between chunks of the stream, each time while the first worker is
rating a backlog. Every round is rated exactly as replay rates it (nothing lost: an offset is
committed only for a round that was handled; nothing skipped or acknowledged during a
rebalance), every event present, the ledgers empty."""

from __future__ import annotations

import time
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
CHUNKS = 3
PER_CHUNK = 1000


def rated(redis_url: str, rounds: list[dict]) -> int:
    client = redis.Redis.from_url(redis_url)
    try:
        statuses = faults_h.statuses(client, harness.expected_rounds(rounds))
        return sum(s in (b"rated", b"no_outcome") for s in statuses.values())
    finally:
        client.close()


def wait_some_rated(redis_url: str, rounds: list[dict], at_least: int) -> None:
    faults_h.wait_until(lambda: rated(redis_url, rounds) >= at_least, f"{at_least} rounds rated")


def test_workers_joining_and_leaving_mid_publish_lose_nothing(local_stack, stack_redis_url: str,
                                                             fresh_prefix: str, tmp_path: Path) -> None:
    rounds = harness.synthetic_rounds(seed=41, count=CHUNKS * PER_CHUNK, ladders=LADDERS, pool=60, max_size=3)
    chunks = [rounds[i * PER_CHUNK:(i + 1) * PER_CHUNK] for i in range(CHUNKS)]
    env = faults_h.fault_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, tmp_path, LOG_LEVEL="info")
    ensure(Settings.from_env(env))
    topic = f"{fresh_prefix}rounds"
    first = harness.Worker(env, tmp_path / "first.log").start()
    workers = [first]
    try:
        harness.publish(local_stack.bootstrap, topic, chunks[0])
        wait_some_rated(stack_redis_url, chunks[0], 50)
        joining = harness.Worker(env, tmp_path / "second.log").start()  # joins: a rebalance
        workers.append(joining)
        harness.publish(local_stack.bootstrap, topic, chunks[1])
        backlog_at_join = len(rounds[:2 * PER_CHUNK]) - rated(stack_redis_url, rounds[:2 * PER_CHUNK])
        wait_some_rated(stack_redis_url, rounds[:2 * PER_CHUNK], PER_CHUNK + 50)
        harness.publish(local_stack.bootstrap, topic, chunks[2])
        time.sleep(1.0)
        backlog_at_leave = len(rounds) - rated(stack_redis_url, rounds)
        joining.stop()  # leaves: another rebalance, the first worker takes its partitions back
        harness.wait_drained(stack_redis_url, harness.expected_rounds(rounds), [first])
        assert backlog_at_join > 0 and backlog_at_leave > 0, "a rebalance fell outside the stream"
        harness.assert_equals_reference(stack_redis_url, harness.reference(rounds, engine.preset("mmr")))
        faults_h.wait_ledgers_empty(stack_redis_url, list(LADDERS))
        faults_h.assert_events_complete(local_stack.bootstrap, fresh_prefix, rounds)
        assigned = "Executing _on_partitions_assigned"  # Faust's INFO line of each assignment
        assert first.log_path.read_text(errors="replace").count(assigned) >= 3, "the first worker saw no rebalance"
        assert assigned in joining.log_path.read_text(errors="replace"), "the second worker never joined"
    finally:
        faults_h.stop_all(workers)
