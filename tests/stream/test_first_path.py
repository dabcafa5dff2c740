"""Smallest end-to-end path: one worker, one ladder, 20 rounds, with the Redis Cluster call layout
(REDIS_CLUSTER=true: one player per script call); Redis equals the in-process replay."""

from __future__ import annotations

from pathlib import Path

import pytest

from stream import engine
import pipeline_harness as harness

pytestmark = pytest.mark.integration


def test_one_worker_cluster_layout_equals_replay(local_stack, stack_redis_url: str, fresh_prefix: str, tmp_path: Path) -> None:
    rounds = harness.synthetic_rounds(seed=1, count=20, ladders=("solo",), pool=12)
    worker = harness.Worker(harness.worker_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, REDIS_CLUSTER="true"),
                            tmp_path / "worker.log").start()
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", rounds)
        harness.wait_drained(stack_redis_url, harness.expected_rounds(rounds), [worker])
    finally:
        worker.stop()
    harness.assert_equals_reference(stack_redis_url, harness.reference(rounds, engine.preset("mmr")))
