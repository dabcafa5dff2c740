"""A worker dies like ``kill -9`` mid-season (two workers; one crash point in phase one, one in
phase two after its Redis writes), is restarted, and Redis still equals ``stream replay --ladders``
of the same rounds within 1e-9: the seasons' soft resets, decided by each round's time and the
schedule, are neither lost nor applied twice by the redelivered work; every event is present
(individual rounds: the events check counts players of plain standings)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import fault_harness as faults_h
import pipeline_harness as harness
from stream.pipeline import faults
from stream.pipeline.topics import ensure
from stream.settings import Settings
from test_seasons_pipeline import LADDERS, assert_equals_replay, rounds

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("point", [faults.AFTER_FANOUT_STORED_BEFORE_SEND, faults.PHASE_TWO_AFTER_REDIS_BEFORE_EMIT])
def test_kill_mid_season_then_restart(point: str, local_stack, stack_redis_url: str, fresh_prefix: str,
                                      tmp_path: Path) -> None:
    published = sorted((r for r in rounds() if "player" in r["standings"][0]), key=lambda r: r["occurred_at"])
    env = faults_h.fault_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, tmp_path, point,
                             LADDERS=json.dumps(LADDERS), PHASE_ONE_BATCH="16")
    ensure(Settings.from_env(env))
    workers = [harness.Worker(env, tmp_path / f"worker{i}.log").start() for i in range(2)]
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", published)
        crashes = faults_h.drain(stack_redis_url, harness.expected_rounds(published), workers, restart=True)
        assert (tmp_path / "fault.marker").exists(), "the fault point was never reached"
        assert crashes == 1, f"expected exactly one crash at {point}, saw {crashes}"
        faults_h.wait_ledgers_empty(stack_redis_url, sorted(harness.expected_rounds(published)))
        faults_h.assert_events_complete(local_stack.bootstrap, fresh_prefix, published)
    finally:
        faults_h.stop_all(workers)
    assert_equals_replay(stack_redis_url, published, tmp_path)
