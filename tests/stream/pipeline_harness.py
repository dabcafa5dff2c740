"""Test harness of the streaming pipeline: synthetic rounds, worker subprocesses, the replay oracle.

Workers run as real ``python -m stream worker`` processes (forked from the session's fork server,
tests/stream/forkserver.py: the same entry point, without the imports) against the session's real
broker and redis-server; nothing is mocked.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

import numpy as np
import redis

from stream import engine
from stream.batch.dedup import first_copies
from stream.batch.replay import replay
from stream.contracts import Limits, RoundRejected, RoundResult, parse_round, validate
from stream.contracts.ordering import LadderOrder
from stream.store import keys
from tests.engine.oracles import state_from_bytes
from tests.stream import forkserver

REPO = Path(__file__).resolve().parents[2]
DRAIN_TIMEOUT_S = 240.0
POLL_S = 0.2
STOP_TIMEOUT_S = 20.0
"""How long a stopping worker (SIGTERM) gets before it is killed."""
TOLERANCE = 1e-9
BASE_TIME = 1_700_000_000.0
DAY_S = 86_400.0


def synthetic_rounds(seed: int, count: int, *, ladders: Sequence[str] = ("alpha", "beta"), pool: int = 40,
                     min_size: int = 2, max_size: int = 12) -> list[dict]:
    """Seeded rounds over a shared player pool: overlapping players, ties, several ladders."""
    rng = random.Random(seed)
    players = [f"p{i:03d}" for i in range(pool)]
    rounds = []
    for i in range(count):
        size = rng.randint(min_size, max_size)
        chosen = rng.sample(players, size)
        ranks = sorted(rng.randint(1, size) for _ in chosen)
        if len(set(ranks)) == 1:
            ranks[-1] += 1
        rounds.append({
            "round_id": f"r{i:05d}", "ladder": rng.choice(list(ladders)),
            "occurred_at": BASE_TIME + i * DAY_S / 4,
            "standings": [{"player": p, "rank": r} for p, r in zip(chosen, ranks)],
        })
    return rounds


def reference(rounds: Iterable[dict | bytes], params: engine.Params, limits: Limits = Limits(),
              ladder_order: str = "") -> dict[tuple[str, str], engine.PlayerState]:
    """The oracle: ``stream.batch.replay`` of the messages (dicts as JSON, or raw bytes) as
    ``stream replay --skip-rejected`` takes them: the stream's acceptance, each (ladder,
    round_id) once (``first_copies``: the first wins), in each ladder's rating order
    (``ladder_order``: the LADDER_ORDER setting)."""
    accepted: list[RoundResult] = []
    for raw in rounds:
        try:
            accepted.append(parse_round(raw if isinstance(raw, bytes) else json.dumps(raw), limits=limits))
        except RoundRejected as rejection:
            if rejection.round is not None:  # no_outcome: registered, rates nobody
                accepted.append(rejection.round)
    by_time = LadderOrder.parse(ladder_order).by_time
    return replay(first_copies(accepted, by_time).rounds, params, keep_rounds=False).states()


def entry_point(env: dict[str, str]) -> str:
    """The module a worker runs as: the CLI, under the fault suite's hook when FAULT_POINT is set
    (tests/faults/injection.py)."""
    return "tests.faults.injection" if env.get("FAULT_POINT") else "stream"


@dataclass
class Worker:
    """A ``stream worker`` subprocess."""

    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen[bytes] | forkserver.ForkedProcess | None = field(default=None, repr=False)
    web: bool = False  # also serve the read API (WEB_PORT of env)

    def start(self) -> Self:
        """``python -m stream worker``, forked from the session's fork server (tests/stream/forkserver.py:
        the same entry point in its own process, without seconds of imports), or a plain subprocess
        with WORKER_FORKSERVER=0."""
        args = ["worker"] if self.web else ["worker", "--no-web"]
        if forkserver.enabled():
            self.process = forkserver.spawn(entry_point(self.env), args, self.env, REPO, self.log_path)
            return self
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen([sys.executable, "-m", entry_point(self.env), *args], cwd=REPO,
                                            env=self.env, stdout=log, stderr=subprocess.STDOUT)
        return self

    def stop(self) -> None:
        """SIGTERM, then wait for the exit (killed after STOP_TIMEOUT_S)."""
        self.terminate()
        self.wait_stopped()

    def terminate(self) -> None:
        """Send SIGTERM, if the process still runs."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def wait_stopped(self) -> None:
        """Wait for the process to exit; kill it if it is still there after STOP_TIMEOUT_S."""
        if self.process is None:
            return
        try:
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]


def stop_workers(workers: Iterable[Worker]) -> None:
    """Stop every worker: SIGTERM to all of them first, then wait for each (a worker's stop takes
    about a second however little it has in hand: Faust's shutdown; stopped together, not one
    after the other)."""
    workers = list(workers)
    for w in workers:
        w.terminate()
    for w in workers:
        w.wait_stopped()


def worker_env(bootstrap: str, redis_url: str, prefix: str, *, partitions: int = 4, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"KAFKA_BOOTSTRAP": bootstrap, "REDIS_URL": redis_url, "TOPIC_PREFIX": prefix,
                "APP_ID": f"{prefix}app", "PARTITIONS": str(partitions), "LOG_LEVEL": "warning",
                "ENGINE_PRESET": "mmr"})
    env.update(extra)
    return env


def publish(bootstrap: str, topic: str, rounds: Iterable[dict | bytes], *, key: str | None = None) -> None:
    """Publish rounds (dicts as JSON, or raw bytes) keyed by ladder, in order, then flush."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    try:
        for r in rounds:
            if isinstance(r, bytes):
                producer.send(topic, key=(key or "default").encode(), value=r)
            else:
                producer.send(topic, key=r.get("ladder", "default").encode(), value=json.dumps(r).encode())
        producer.flush()
    finally:
        producer.close()


def redis_for(redis_url: str) -> redis.Redis | redis.RedisCluster:
    """A blocking client for ``redis_url``: a cluster client if the server is a Redis Cluster node."""
    probe = redis.Redis.from_url(redis_url)
    try:
        clustered = probe.info("cluster").get("cluster_enabled") == 1
    finally:
        probe.close()
    return redis.RedisCluster.from_url(redis_url) if clustered else redis.Redis.from_url(redis_url)


def wait_drained(redis_url: str, expected: dict[str, set[str]], workers: Sequence[Worker],
                 timeout_s: float = DRAIN_TIMEOUT_S) -> None:
    """Until every expected round (ladder → round ids) is rated or no_outcome in Redis, and no
    correction holds an expected ladder (phase two's repair of a round it gave up on re-rates
    the ladder after its other rounds are rated)."""
    client = redis_for(redis_url)
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            missing = []
            pipe = client.pipeline(transaction=False)
            order = [(ladder, rid) for ladder, ids in expected.items() for rid in sorted(ids)]
            for ladder, rid in order:
                pipe.hget(keys.round_record(ladder, rid), "status")
            for ladder in expected:
                pipe.hget(keys.ladder(ladder), "hold")
            replies = pipe.execute()
            for (ladder, rid), status in zip(order, replies):
                if status not in (b"rated", b"no_outcome"):
                    missing.append((ladder, rid, status))
            for ladder, holder in zip(expected, replies[len(order):]):
                if holder is not None:
                    missing.append((ladder, "held by", holder))
            if not missing:
                return
            for w in workers:
                assert w.process is not None and w.process.poll() is None, f"worker died:\n{w.log()}"
            if time.monotonic() > deadline:
                logs = "\n".join(w.log() for w in workers)
                raise AssertionError(f"{len(missing)} rounds not rated, e.g. {missing[:5]}\n{logs}")
            time.sleep(POLL_S)
    finally:
        client.close()


def assert_equals_reference(redis_url: str, expected: dict[tuple[str, str], engine.PlayerState]) -> None:
    """Redis holds, for every player, the reference's mu, sigma, rounds (within 1e-9), and no one else."""
    client = redis_for(redis_url)
    try:
        pipe = client.pipeline(transaction=False)
        order = sorted(expected)
        for ladder, player in order:
            pipe.hmget(keys.player(ladder, player), ("mu", "sigma", "rounds", "state"))
        for (ladder, player), (mu, sigma, rounds, state) in zip(order, pipe.execute()):
            want = expected[(ladder, player)]
            assert mu is not None, f"{ladder}/{player} missing in Redis"
            assert abs(float(mu) - want.mu) <= TOLERANCE, (ladder, player, float(mu), want.mu)
            assert abs(float(sigma) - want.sigma) <= TOLERANCE, (ladder, player, float(sigma), want.sigma)
            assert int(rounds) == want.rounds, (ladder, player, int(rounds), want.rounds)
            got = state_from_bytes(state)
            assert len(got.factors) == len(want.factors)
            assert np.allclose(np.asarray(got.factors).reshape(-1, 3), np.asarray(want.factors).reshape(-1, 3),
                               rtol=0, atol=TOLERANCE) if got.factors else True
        ladders = {ladder for ladder, _ in expected}
        stored = {(ladder, m.decode()) for ladder in ladders for m in client.zrange(keys.leaderboard(ladder), 0, -1)}
        assert stored == set(expected)
    finally:
        client.close()


def consume_all(bootstrap: str, topic: str, *, at_least: int, timeout_s: float = 60.0,
                distinct: bool = False) -> list[tuple[bytes | None, bytes]]:
    """Every (key, value) on ``topic`` from the beginning, once at least ``at_least`` arrived
    (``distinct``: at least that many different ones; a re-emitted event repeats its bytes, so
    after a crash duplicates must not end the wait before the last events are read)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        deadline = time.monotonic() + timeout_s
        parts = None
        while not parts:
            parts = consumer.partitions_for_topic(topic)
            assert time.monotonic() < deadline, f"topic {topic} never appeared"
            time.sleep(0.1) if not parts else None
        consumer.assign([TopicPartition(topic, p) for p in parts])
        consumer.seek_to_beginning()
        out: list[tuple[bytes | None, bytes]] = []
        while len(set(out) if distinct else out) < at_least and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                out += [(r.key, r.value) for r in records]
        # a short extra poll picks up anything beyond the minimum (duplicates, re-emissions)
        for records in consumer.poll(timeout_ms=1000).values():
            out += [(r.key, r.value) for r in records]
        return out
    finally:
        consumer.close()


def expected_rounds(rounds: Iterable[dict]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for r in rounds:
        out.setdefault(r.get("ladder", "default"), set()).add(r["round_id"])
    return out



def publish_to_partitions(bootstrap: str, topic: str, messages: Iterable[tuple[int, bytes]]) -> None:
    """Publish raw values to explicit partitions (re-sent tasks), then flush."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    try:
        for partition, value in messages:
            producer.send(topic, value=value, partition=partition)
        producer.flush()
    finally:
        producer.close()


def events_by_id(events: Iterable[tuple[bytes | None, bytes]]) -> dict[str, set[bytes]]:
    """Every RatingChange validated against its schema and keyed by its player; contents grouped
    by ``event_id`` (a re-emitted event must add no second content)."""
    by_id: dict[str, set[bytes]] = defaultdict(set)
    for key, value in events:
        validate("rating-change", value)
        change = json.loads(value)
        assert key == change["player"].encode()
        by_id[change["event_id"]].add(value)
    return by_id
