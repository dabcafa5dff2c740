"""A worker crashes (os._exit(137), like kill -9) at each named point of a round's path, once,
and is restarted: Redis still equals replay and every rating-change event is on Kafka.

The points (stream/pipeline/faults.py) cover every gap between two durable steps: registered
but not computed, players queued but fan-out not stored, fan-out stored but not sent, sent but
the input not acked, phase two applied in Redis but no event emitted, events emitted but the
batch not acked.
"""

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

ROUNDS = 40


@pytest.mark.parametrize("point", faults_h.CRASH_POINTS)
def test_crash_at_fault_point_then_restart(point: str, local_stack, stack_redis_url: str, fresh_prefix: str,
                                           tmp_path: Path) -> None:
    rounds = harness.synthetic_rounds(seed=len(point), count=ROUNDS, ladders=("alpha", "beta"), pool=16)
    env = faults_h.fault_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, tmp_path, point)
    ensure(Settings.from_env(env))
    workers = [harness.Worker(env, tmp_path / "worker.log").start()]
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", rounds)
        crashes = faults_h.drain(stack_redis_url, harness.expected_rounds(rounds), workers, restart=True)
        assert (tmp_path / "fault.marker").exists(), "the fault point was never reached"
        assert crashes == 1, f"expected exactly one crash at {point}, saw {crashes}"
        harness.assert_equals_reference(stack_redis_url, harness.reference(rounds, engine.preset("mmr")))
        faults_h.wait_ledgers_empty(stack_redis_url, sorted(harness.expected_rounds(rounds)))
        faults_h.assert_events_complete(local_stack.bootstrap, fresh_prefix, rounds)
    finally:
        faults_h.stop_all(workers)
