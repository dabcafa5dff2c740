"""A stalled input partition (faust-streaming's rebalance bug, simulated): the watchdog notices it.

A real worker subprocess on the real broker and Redis rates a first wave of rounds; then the
test-only fault point pauses the lowest ``rounds`` partition inside aiokafka without Faust
knowing, so the consumer silently stops fetching it while the second wave arrives on it
(nothing of it reaches Redis: the sweeper cannot help).

* ``stall_rounds_partition``: the watchdog raises ``ems_stalled_partitions`` and an ERROR naming
  the partition, heals it (seek to the committed offset + resume) and the worker rates the rest.
* ``stall_rounds_partition_forever``: the heal cannot help; the worker exits with status 70 and,
  restarted (its supervisor's job), rates everything.
* No false alarm: Redis down for several STALL_TIMEOUT_S while rounds wait on every partition
  (handlers retrying, messages in the worker's hands) is not a stall.

Both end with Redis equal to ``stream replay`` and every RatingChange on ``rating-changes``.
"""

from __future__ import annotations

import re
import socket
import time
import urllib.request
from pathlib import Path

import pytest
import redis
from kafka.partitioner.default import murmur2
from prometheus_client.parser import text_string_to_metric_families

import fault_harness as faults_h
import pipeline_harness as harness
from stream import engine
from stream.pipeline import faults
from stream.pipeline.topics import ensure
from stream.pipeline.runtime.watchdog import STALL_EXIT_CODE
from stream.settings import Settings
from stream.stack.redis_server import RedisServer
from stream.store import keys

pytestmark = pytest.mark.integration

PARTITIONS = 4
LADDERS = ("alpha", "gamma", "epsilon", "beta")  # partitions 0, 2, 1, 0 of 4
ROUNDS = 40
FIRST_WAVE = 16


class WebWorker(harness.Worker):
    """A worker that serves /metrics on ``port`` (the harness' workers run without the web server)."""

    def __init__(self, env: dict[str, str], log_path: Path, port: int) -> None:
        super().__init__({**env, "WEB_PORT": str(port), "WEB_HOST": "127.0.0.1"}, log_path, web=True)
        self.port = port

    def sample(self, name: str, **labels: str) -> float | None:
        """The value of metric sample ``name`` with ``labels`` on /metrics, None if absent or not served yet."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=2) as response:
                text = response.read().decode()
        except OSError:
            return None
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                    return sample.value
        return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def partition_of(ladder: str) -> int:
    """The ``rounds`` partition of a ladder (the producer's default partitioner: murmur2 of the key)."""
    return (murmur2(ladder.encode()) & 0x7FFFFFFF) % PARTITIONS


def stall_env(local_stack, redis_url: str, prefix: str, tmp_path: Path, point: str,
              stall_timeout_s: float = 4.0) -> dict[str, str]:
    return faults_h.fault_env(local_stack.bootstrap, redis_url, prefix, tmp_path, point, WATCHDOG_INTERVAL_S="0.5",
                              STALL_TIMEOUT_S=str(stall_timeout_s), PARTITIONS=str(PARTITIONS))


def stalled_partition(local_stack, redis_url: str, topic: str, rounds: list[dict], tmp_path: Path,
                      worker: harness.Worker) -> int:
    """Publish the first wave and wait until it is rated and the fault fired (it needs committed
    offsets); the partition it stalled (from the marker's ``partition N`` line)."""
    harness.publish(local_stack.bootstrap, topic, rounds[:FIRST_WAVE])
    harness.wait_drained(redis_url, harness.expected_rounds(rounds[:FIRST_WAVE]), [worker])
    marker = tmp_path / "fault.marker"
    line = re.compile(r"^partition (\d+)$", re.MULTILINE)  # written once the partition is paused
    faults_h.wait_until(lambda: marker.exists() and line.search(marker.read_text()) is not None, "the stall fault",
                        timeout_s=120, logs=worker.log)
    match = line.search(marker.read_text())
    assert match is not None
    partition = int(match.group(1))
    assert any(partition_of(ladder) == partition for ladder in LADDERS), "rounds must arrive on the stalled partition"
    return partition


def test_watchdog_heals_a_partition_the_consumer_stopped_fetching(local_stack, stack_redis_url: str,
                                                                  fresh_prefix: str, tmp_path: Path) -> None:
    rounds = harness.synthetic_rounds(seed=31, count=ROUNDS, ladders=LADDERS, pool=20)
    env = stall_env(local_stack, stack_redis_url, fresh_prefix, tmp_path, faults.STALL_ROUNDS_PARTITION,
                    stall_timeout_s=6.0)
    ensure(Settings.from_env(env))
    worker = WebWorker(env, tmp_path / "worker.log", free_port()).start()
    client = redis.Redis.from_url(stack_redis_url)
    topic = f"{fresh_prefix}rounds"
    try:
        partition = stalled_partition(local_stack, stack_redis_url, topic, rounds, tmp_path, worker)
        second = rounds[FIRST_WAVE:]
        harness.publish(local_stack.bootstrap, topic, second)
        stalled = {(r["ladder"], r["round_id"]) for r in second if partition_of(r["ladder"]) == partition}
        assert stalled, "rounds must arrive on the stalled partition"
        healthy = harness.expected_rounds([r for r in second if (r["ladder"], r["round_id"]) not in stalled])
        harness.wait_drained(stack_redis_url, healthy, [worker])
        if "healing stalled" not in worker.log_path.read_text():  # the stall is real: not even registered
            assert all(client.hget(keys.round_record(ladder, rid), "status") is None for ladder, rid in stalled)

        harness.wait_drained(stack_redis_url, harness.expected_rounds(rounds), [worker])
        log = worker.log_path.read_text()
        assert f"stalled input partition(s): {topic}[{partition}]" in log
        assert f"healing stalled partition(s) {topic}[{partition}]" in log
        assert worker.sample("ems_stall_heals_total", topic=topic) == 1.0
        faults_h.wait_until(lambda: worker.sample("ems_stalled_partitions", topic=topic) == 0.0,
                            "the gauge back to 0", timeout_s=30, logs=worker.log)
        assert worker.process is not None and worker.process.poll() is None, "healed: the worker did not exit"
        harness.assert_equals_reference(stack_redis_url, harness.reference(rounds, engine.preset("mmr")))
        faults_h.wait_ledgers_empty(stack_redis_url, LADDERS, logs=worker.log)
        faults_h.assert_events_complete(local_stack.bootstrap, fresh_prefix, rounds)
    finally:
        client.close()
        worker.stop()


def test_watchdog_exits_when_the_heal_does_not_help_and_a_restart_rates_everything(
        local_stack, stack_redis_url: str, fresh_prefix: str, tmp_path: Path) -> None:
    rounds = harness.synthetic_rounds(seed=32, count=ROUNDS, ladders=LADDERS, pool=20)
    env = stall_env(local_stack, stack_redis_url, fresh_prefix, tmp_path, faults.STALL_ROUNDS_PARTITION_FOREVER)
    ensure(Settings.from_env(env))
    worker = WebWorker(env, tmp_path / "worker.log", free_port()).start()
    topic = f"{fresh_prefix}rounds"
    restarted: harness.Worker | None = None
    try:
        partition = stalled_partition(local_stack, stack_redis_url, topic, rounds, tmp_path, worker)
        harness.publish(local_stack.bootstrap, topic, rounds[FIRST_WAVE:])
        faults_h.wait_until(lambda: worker.sample("ems_stalled_partitions", topic=topic) == 1.0,
                            "the gauge to show the stalled partition", timeout_s=60, logs=worker.log)
        assert worker.process is not None
        code = worker.process.wait(timeout=60)
        assert code == STALL_EXIT_CODE, worker.log()
        log = worker.log_path.read_text()
        assert f"stalled input partition(s): {topic}[{partition}]" in log
        assert f"healing stalled partition(s) {topic}[{partition}]" in log
        assert "still stalled" in log and f"exiting with status {STALL_EXIT_CODE}" in log

        started = time.monotonic()
        restarted = harness.Worker(env, tmp_path / "worker.restarted.log").start()  # the supervisor's restart
        harness.wait_drained(stack_redis_url, harness.expected_rounds(rounds), [restarted])
        assert time.monotonic() - started < harness.DRAIN_TIMEOUT_S
        assert "stalled input partition" not in restarted.log_path.read_text()
        harness.assert_equals_reference(stack_redis_url, harness.reference(rounds, engine.preset("mmr")))
        faults_h.wait_ledgers_empty(stack_redis_url, LADDERS, logs=restarted.log)
        faults_h.assert_events_complete(local_stack.bootstrap, fresh_prefix, rounds)
    finally:
        worker.stop()
        if restarted is not None:
            restarted.stop()


def test_handlers_waiting_on_redis_are_no_stall(local_stack, fresh_prefix: str, tmp_path: Path) -> None:
    server = RedisServer(appendonly=True, workdir=tmp_path / "redis").start()
    rounds = harness.synthetic_rounds(seed=33, count=600, ladders=LADDERS, pool=24)
    # small batches: the stream must still be running when Redis goes down (batched phase one
    # with its posterior cache drains a few hundred rounds in well under a second)
    env = {**stall_env(local_stack, server.url, fresh_prefix, tmp_path, ""), "STALL_TIMEOUT_S": "1.5",
           "PHASE_ONE_BATCH": "4"}
    ensure(Settings.from_env(env))
    worker = harness.Worker(env, tmp_path / "worker.log").start()
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", rounds)
        client = redis.Redis.from_url(server.url)
        rated = lambda: sum(int(client.hget(keys.ladder(lad), "rounds_rated") or 0) for lad in LADDERS)  # noqa: E731
        faults_h.wait_until(lambda: rated() >= 10, "the first rounds", logs=worker.log)
        client.close()
        faults_h.restart_redis(server, 6.0)  # down four STALL_TIMEOUT_S: a stall would be healed, then exited on
        client = redis.Redis.from_url(server.url)
        assert rated() < len(rounds), "the stream drained before Redis went down: nothing was tested"
        client.close()
        harness.wait_drained(server.url, harness.expected_rounds(rounds), [worker])  # also: the worker is alive
        log = worker.log_path.read_text()
        assert "retrying" in log, "the worker never saw Redis down"
        assert "stalled input partition" not in log and "healing stalled" not in log
        harness.assert_equals_reference(server.url, harness.reference(rounds, engine.preset("mmr")))
    finally:
        worker.stop()
        server.stop()
