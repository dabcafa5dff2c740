"""A worker dies in the middle of a phase-one batch that spans several ladders, then restarts.

Every round of three ladders goes to ONE ``rounds`` partition (as ladders whose keys hash
alike do), published at once, so phase one's batches hold rounds of several ladders with
shared players (small rounds from a small pool: chains several rounds deep per batch). The
worker exits like ``kill -9`` while a batch's store pipeline is half written
(``in_batch_store``: the first rounds stored, the next one's players marked queued only), or
right after the whole batch is stored, before anything is sent. The restarted worker
re-sends what was stored, rates the rest (never from a prior a half-written batch left stale)
and Redis equals replay, every event present, the ledgers empty.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import fault_harness as faults_h
import pipeline_harness as harness
from stream import engine
from stream.pipeline import faults
from stream.pipeline.topics import ensure
from stream.settings import Settings

pytestmark = pytest.mark.integration

ROUNDS = 90
LADDERS = ("alpha", "beta", "gamma")


@pytest.mark.parametrize("point", [faults.IN_BATCH_STORE, faults.AFTER_FANOUT_STORED_BEFORE_SEND])
def test_kill_mid_batch_spanning_ladders_then_restart(point: str, local_stack, stack_redis_url: str,
                                                      fresh_prefix: str, tmp_path: Path) -> None:
    rounds = harness.synthetic_rounds(seed=23, count=ROUNDS, ladders=LADDERS, pool=12, min_size=2, max_size=4)
    env = faults_h.fault_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, tmp_path, point)
    ensure(Settings.from_env(env))
    workers = [harness.Worker(env, tmp_path / "worker.log").start()]
    try:
        harness.publish_to_partitions(local_stack.bootstrap, f"{fresh_prefix}rounds",
                                      [(0, json.dumps(r).encode()) for r in rounds])
        crashes = faults_h.drain(stack_redis_url, harness.expected_rounds(rounds), workers, restart=True)
        assert (tmp_path / "fault.marker").exists(), "the fault point was never reached"
        assert crashes == 1, f"expected exactly one crash at {point}, saw {crashes}"
        if point == faults.IN_BATCH_STORE:
            marker = (tmp_path / "fault.marker").read_text()
            ladders = marker.split("ladders ", 1)[1].split()[0].split(",")
            assert len(ladders) >= 2, f"the killed batch held rounds of one ladder only: {marker!r}"
        harness.assert_equals_reference(stack_redis_url, harness.reference(rounds, engine.preset("mmr")))
        faults_h.wait_ledgers_empty(stack_redis_url, sorted(harness.expected_rounds(rounds)))
        faults_h.assert_events_complete(local_stack.bootstrap, fresh_prefix, rounds)
    finally:
        faults_h.stop_all(workers)
