"""The worker's probes and SIGTERM against real processes (the embedded broker, a redis-server of
the test's own on a free port, ``stream worker`` subprocesses).

* ``/ready`` turns 503 while that Redis is down and 200 again once it is back, with no restart of
  the worker; ``/live`` stays 200 throughout (README "Probes").
* SIGTERM mid-stream: the worker finishes its batches in hand, commits and exits 0; what it
  committed on ``rounds`` is exactly what it registered (nothing handled is left to redeliver,
  nothing committed was skipped), and a new worker then drains the rest to the reference.
"""

from __future__ import annotations

import json
import signal
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import redis

import fault_harness as faults_h
import pipeline_harness as harness
from stream import engine
from stream.pipeline.topics import ensure
from stream.settings import Settings
from stream.stack.ports import free_port
from stream.stack.redis_server import RedisServer
from stream.store import keys

pytestmark = pytest.mark.integration

HTTP_TIMEOUT_S = 5.0
PROBE_WAIT_S = 90.0


def probe(port: int, path: str) -> tuple[int, dict]:
    """(status, JSON body) of GET ``path`` on the worker's web server; (0, {}) if it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=HTTP_TIMEOUT_S) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
    except (urllib.error.URLError, OSError):
        return 0, {}


def test_ready_follows_redis_without_a_restart(local_stack, fresh_prefix: str, tmp_path: Path) -> None:
    server = RedisServer(appendonly=True, workdir=tmp_path / "redis").start()
    port = free_port()
    env = faults_h.fault_env(local_stack.bootstrap, server.url, fresh_prefix, tmp_path, WEB_PORT=str(port))
    ensure(Settings.from_env(env))
    worker = harness.Worker(env, tmp_path / "worker.log", web=True).start()
    try:
        rounds = harness.synthetic_rounds(seed=3, count=20, ladders=("alpha", "beta"), pool=16)
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", rounds)
        harness.wait_drained(server.url, harness.expected_rounds(rounds), [worker])
        faults_h.wait_until(lambda: probe(port, "/ready")[0] == 200, "/ready 200 once caught up", PROBE_WAIT_S,
                            logs=lambda: f"{probe(port, '/ready')}\n{worker.log()}")
        status, body = probe(port, "/ready")
        assert body["assigned"]["ok"] and body["redis"]["ok"] and body["kafka"]["ok"], body

        server.stop(kill=True)
        faults_h.wait_until(lambda: probe(port, "/ready")[0] == 503, "/ready 503 with Redis down", PROBE_WAIT_S,
                            logs=worker.log)
        status, body = probe(port, "/ready")
        assert status == 503 and body["redis"]["ok"] is False, body
        assert probe(port, "/live")[0] == 200, "liveness must not depend on Redis"

        server.start()
        faults_h.wait_loaded(server.url)
        faults_h.wait_until(lambda: probe(port, "/ready")[0] == 200, "/ready 200 after Redis is back", PROBE_WAIT_S,
                            logs=lambda: f"{probe(port, '/ready')}\n{worker.log()}")
        assert worker.process is not None and worker.process.poll() is None, "the worker must not have restarted"
        status, body = probe(port, "/live")
        assert status == 200 and body["live"] is True, body
    finally:
        worker.stop()
        server.stop()


ROUNDS = 3000
SHUTDOWN_TIMEOUT_S = 20.0
SIGTERM_AFTER_RATED = 50


def committed_rounds(bootstrap: str, prefix: str, partitions: int) -> int:
    """Sum over the ``rounds`` partitions of the worker group's committed offset."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=f"{prefix}app", enable_auto_commit=False)
    try:
        return sum(consumer.committed(TopicPartition(f"{prefix}rounds", p)) or 0 for p in range(partitions))
    finally:
        consumer.close(autocommit=False)


def test_sigterm_finishes_the_batches_in_hand_commits_and_exits(local_stack, fresh_prefix: str,
                                                                 tmp_path: Path) -> None:
    server = RedisServer(workdir=tmp_path / "redis").start()
    ladders = ("alpha", "beta", "gamma", "delta")
    rounds = harness.synthetic_rounds(seed=29, count=ROUNDS, ladders=ladders, pool=40)
    env = faults_h.fault_env(local_stack.bootstrap, server.url, fresh_prefix, tmp_path,
                             SHUTDOWN_TIMEOUT_S=str(SHUTDOWN_TIMEOUT_S), PHASE_ONE_BATCH="8", LOG_LEVEL="warning")
    ensure(Settings.from_env(env))
    worker = harness.Worker(env, tmp_path / "worker.log").start()
    client = redis.Redis.from_url(server.url)
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", rounds)
        rated = lambda: sum(int(client.hget(keys.ladder(l), "rounds_rated") or 0) for l in ladders)  # noqa: E731
        faults_h.wait_until(lambda: rated() >= SIGTERM_AFTER_RATED, "the first rounds", logs=worker.log)
        assert worker.process is not None
        worker.process.send_signal(signal.SIGTERM)
        try:  # the bound: the drain's, plus Faust's own stop
            code = worker.process.wait(timeout=SHUTDOWN_TIMEOUT_S + 30)
        except Exception:
            worker.process.kill()
            raise AssertionError(f"the worker did not exit within the bound\n{worker.log()}")
        log = worker.log_path.read_text(errors="replace")
        assert code == 0, log[-3000:]
        assert "every batch in hand finished and committed" in log, log[-3000:]
        registered = sum(int(client.hget(keys.ladder(l), "seq") or 0) for l in ladders)
        assert 0 < registered < ROUNDS, "the stream drained before SIGTERM: nothing was tested"
        assert committed_rounds(local_stack.bootstrap, fresh_prefix, 4) == registered

        second = harness.Worker(env, tmp_path / "worker2.log").start()
        try:
            harness.wait_drained(server.url, harness.expected_rounds(rounds), [second])
            harness.assert_equals_reference(server.url, harness.reference(rounds, engine.preset("mmr")))
        finally:
            second.stop()
    finally:
        client.close()
        worker.stop()
        server.stop()
