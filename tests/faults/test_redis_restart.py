"""Redis crashes (SIGKILL) mid-stream and comes back a few seconds later from its AOF
(appendfsync always): the worker retries with backoff instead of dropping input, survives,
and Redis ends equal to replay with every event present."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

import fault_harness as faults_h
import pipeline_harness as harness
from stream import engine
from stream.pipeline.topics import ensure
from stream.settings import Settings
from stream.stack.redis_server import RedisServer
from stream.store import keys

pytestmark = pytest.mark.integration

ROUNDS = 600
"""Enough that the worker still has rounds to rate when the polled rated count first passes
CRASH_AFTER_RATED, however fast it rates (else the restart tests nothing)."""
CRASH_AFTER_RATED = 30
DOWN_S = 3.0


def test_worker_survives_a_redis_restart(local_stack, fresh_prefix: str, tmp_path: Path) -> None:
    server = RedisServer(appendonly=True, workdir=tmp_path / "redis").start()
    rounds = harness.synthetic_rounds(seed=13, count=ROUNDS, ladders=("alpha", "beta"), pool=24)
    env = faults_h.fault_env(local_stack.bootstrap, server.url, fresh_prefix, tmp_path)
    ensure(Settings.from_env(env))
    worker = harness.Worker(env, tmp_path / "worker.log").start()
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", rounds)
        client = redis.Redis.from_url(server.url)
        rated = lambda: sum(int(client.hget(keys.ladder(l), "rounds_rated") or 0) for l in ("alpha", "beta"))  # noqa: E731
        faults_h.wait_until(lambda: rated() >= CRASH_AFTER_RATED, "the first rounds", logs=worker.log)
        client.close()
        faults_h.restart_redis(server, DOWN_S)
        client = redis.Redis.from_url(server.url)
        assert rated() < ROUNDS, "the stream drained before the crash: nothing was tested"
        client.close()
        harness.wait_drained(server.url, harness.expected_rounds(rounds), [worker])  # also: the worker is alive
        assert "retrying" in worker.log_path.read_text(), "the worker never saw Redis down"
        harness.assert_equals_reference(server.url, harness.reference(rounds, engine.preset("mmr")))
        faults_h.wait_ledgers_empty(server.url, sorted(harness.expected_rounds(rounds)))
        faults_h.assert_events_complete(local_stack.bootstrap, fresh_prefix, rounds)
    finally:
        worker.stop()
        server.stop()
