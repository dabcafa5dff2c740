"""Every round published twice (the copy a few positions later, or right after): each is rated
once, Redis equals replay of the distinct rounds, and every event is present with one content."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import fault_harness as faults_h
import pipeline_harness as harness
from stream import engine
from stream.pipeline.topics import ensure
from stream.settings import Settings

pytestmark = pytest.mark.integration

ROUNDS = 120
MAX_GAP = 8


def test_every_round_published_twice(local_stack, stack_redis_url: str, fresh_prefix: str, tmp_path: Path) -> None:
    rounds = harness.synthetic_rounds(seed=9, count=ROUNDS, ladders=("alpha", "beta"), pool=24)
    rng = random.Random(9)
    stream_: list[dict] = []
    for i, r in enumerate(rounds):
        stream_.append(r)
    for i, r in enumerate(rounds):  # each copy goes 0..MAX_GAP positions after its original
        at = stream_.index(r) + 1 + rng.randint(0, MAX_GAP)
        stream_.insert(min(at, len(stream_)), dict(r))
    assert len(stream_) == 2 * ROUNDS
    env = faults_h.fault_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, tmp_path)
    ensure(Settings.from_env(env))
    workers = [harness.Worker(env, tmp_path / f"worker{i}.log").start() for i in range(2)]
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", stream_)
        harness.wait_drained(stack_redis_url, harness.expected_rounds(rounds), workers)
        harness.assert_equals_reference(stack_redis_url, harness.reference(rounds, engine.preset("mmr")))
        faults_h.wait_ledgers_empty(stack_redis_url, sorted(harness.expected_rounds(rounds)))
        faults_h.assert_events_complete(local_stack.bootstrap, fresh_prefix, rounds)
    finally:
        faults_h.stop_all(workers)
