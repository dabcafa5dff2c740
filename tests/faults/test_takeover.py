"""Two workers; one crashes at a fault point and is NOT restarted: the other takes over its
partitions (after the group rebalances) and finishes the stream. Redis equals replay."""

from __future__ import annotations

from pathlib import Path

import pytest

import fault_harness as faults_h
import pipeline_harness as harness
from stream import engine
from stream.pipeline import faults
from stream.pipeline.topics import ensure
from stream.settings import Settings

pytestmark = pytest.mark.integration

ROUNDS = 80


@pytest.mark.parametrize("point", [faults.AFTER_FANOUT_STORED_BEFORE_SEND, faults.PHASE_TWO_AFTER_REDIS_BEFORE_EMIT])
def test_survivor_takes_over_from_a_crashed_worker(point: str, local_stack, stack_redis_url: str, fresh_prefix: str,
                                                   tmp_path: Path) -> None:
    rounds = harness.synthetic_rounds(seed=21, count=ROUNDS, ladders=("alpha", "beta", "gamma"), pool=24)
    env = faults_h.fault_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, tmp_path, point)
    ensure(Settings.from_env(env))
    workers = [harness.Worker(env, tmp_path / f"worker{i}.log").start() for i in range(2)]
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", rounds)
        crashes = faults_h.drain(stack_redis_url, harness.expected_rounds(rounds), workers, restart=False)
        assert crashes == 1, "exactly one worker crashed at the fault point"
        assert sum(w.process is not None and w.process.poll() is None for w in workers) == 1
        harness.assert_equals_reference(stack_redis_url, harness.reference(rounds, engine.preset("mmr")))
        faults_h.wait_ledgers_empty(stack_redis_url, sorted(harness.expected_rounds(rounds)))
        faults_h.assert_events_complete(local_stack.bootstrap, fresh_prefix, rounds)
    finally:
        faults_h.stop_all(workers)
