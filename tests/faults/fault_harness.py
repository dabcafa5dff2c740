"""Helpers of the fault tests: workers restarted after a fault crash, and the two end checks.

Every fault test ends with (1) Redis equal to ``stream replay`` of the distinct rounds within
1e-9 (``pipeline_harness.assert_equals_reference``) and (2) every expected RatingChange on
``rating-changes`` (duplicates allowed, one content per ``event_id``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

import pipeline_harness as harness
from tests.faults.injection import (  # noqa: F401 - the suites' groups of fault points
    BATCH_CRASH_POINTS, CRASH_EXIT_CODE, CRASH_POINTS, DROP_POINTS, MM_CRASH_POINTS, RAISE_ALWAYS_POINTS, RAISE_POINTS)
from stream.stack.redis_server import RedisServer
from stream.store import keys

FAST_SWEEP = {"SWEEP_TIMEOUT_S": "2", "SWEEP_INTERVAL_S": "0.5", "BARRIER_WARN_S": "5", "RETRY_MAX_DELAY_S": "0.5"}
"""Worker settings of the fault tests: stuck rounds are re-driven within a few seconds."""


def fault_env(bootstrap: str, redis_url: str, prefix: str, tmp_path: Path, point: str = "", **extra: str) -> dict[str, str]:
    """Worker environment with FAULT_POINT (fires once: marker file under ``tmp_path``)."""
    settings = {**FAST_SWEEP, "FAULT_POINT": point, "FAULT_MARKER": str(tmp_path / "fault.marker"), **extra}
    return harness.worker_env(bootstrap, redis_url, prefix, **settings)


def statuses(client: redis.Redis, expected: dict[str, set[str]]) -> dict[tuple[str, str], bytes | None]:
    order = [(ladder, rid) for ladder, ids in expected.items() for rid in sorted(ids)]
    pipe = client.pipeline(transaction=False)
    for ladder, rid in order:
        pipe.hget(keys.round_record(ladder, rid), "status")
    return dict(zip(order, pipe.execute()))


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = harness.DRAIN_TIMEOUT_S,
               logs: Callable[[], str] = lambda: "") -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{logs()}"
        time.sleep(harness.POLL_S / 4)


def restart_redis(server: RedisServer, down_s: float) -> None:
    """Kill ``server`` (as a crash would), leave it down ``down_s`` seconds, start it again and wait
    until it has replayed its append-only file: it listens at once but answers commands with
    LOADING (redis-py's BusyLoadingError) until then, which a test's own client must not see."""
    server.stop(kill=True)
    time.sleep(down_s)
    server.start()
    wait_loaded(server.url)


def wait_loaded(redis_url: str, timeout_s: float = harness.DRAIN_TIMEOUT_S) -> None:
    """Wait until the Redis at ``redis_url`` answers a PING instead of LOADING."""
    client = redis.Redis.from_url(redis_url, retry=Retry(NoBackoff(), 0))  # each LOADING comes back here

    def loaded() -> bool:
        try:
            return bool(client.ping())
        except redis.exceptions.BusyLoadingError:
            return False

    try:
        wait_until(loaded, "redis-server to load its append-only file", timeout_s)
    finally:
        client.close()


def tend(workers: list[harness.Worker], *, restart: bool, crashes: int = 0) -> int:
    """Look at every worker once: one that exited with the fault status is counted once (and, with
    ``restart``, replaced in ``workers`` by a new one logging to ``.N.log``); any other exit fails
    the test. Returns ``crashes`` plus the workers newly counted."""
    for i, w in enumerate(list(workers)):
        assert w.process is not None
        code = w.process.poll()
        if code is None:
            continue
        assert code in (CRASH_EXIT_CODE, -9), f"worker exited with {code}:\n{w.log()}"
        if getattr(w, "counted", False):
            continue
        crashes += 1
        w.counted = True  # type: ignore[attr-defined]
        if restart:
            workers[i] = harness.Worker(w.env, w.log_path.with_suffix(f".{crashes}.log")).start()
    return crashes


def drain(redis_url: str, expected: dict[str, set[str]], workers: list[harness.Worker], *,
          restart: bool, timeout_s: float = harness.DRAIN_TIMEOUT_S) -> int:
    """Wait until every expected round is rated or no_outcome and, when FAULT_POINT is a crash
    point of the rounds' path (every stream meets each of them), until the crashed worker is
    seen. The phase-two points fire after a batch's Redis writes (and the events' send): a
    batch holding the last rounds, which a loaded machine makes of the whole stream, has them
    all rated before its worker gets to the point, let alone exits.

    A worker that exits with the fault status is restarted (``restart``) or left dead (another
    worker must take over); any other exit fails the test. Returns how many workers crashed.
    """
    client = redis.Redis.from_url(redis_url)
    deadline = time.monotonic() + timeout_s
    crashes = 0
    env = workers[0].env if workers else {}
    expects_crash = env.get("FAULT_POINT") in CRASH_POINTS + BATCH_CRASH_POINTS
    try:
        while True:
            done = statuses(client, expected)
            missing = [k for k, s in done.items() if s not in (b"rated", b"no_outcome")]
            if not missing and not (expects_crash and crashes == 0):
                return crashes
            crashes = tend(workers, restart=restart, crashes=crashes)
            alive = [w for w in workers if w.process is not None and w.process.poll() is None]
            assert alive or restart, "every worker died"
            if time.monotonic() > deadline:
                what = f"{len(missing)} rounds not rated, e.g. {missing[:5]}" if missing else \
                    "every round rated, no worker crashed: the fault point was never reached"
                raise AssertionError(what + "\n" + "\n".join(w.log() for w in workers))
            time.sleep(harness.POLL_S)
    finally:
        client.close()


def wait_ledgers_empty(redis_url: str, ladders: Sequence[str], logs: Callable[[], str] = lambda: "") -> None:
    """Until no round is left in the sweeper's ledger: every round's events were confirmed."""
    client = redis.Redis.from_url(redis_url)
    try:
        wait_until(lambda: sum(client.zcard(keys.incomplete_rounds(ladder)) for ladder in ladders) == 0,
                   "every round's events to be confirmed (empty ledgers)", logs=logs)
        assert not client.keys("ems:registered:*") or all(client.zcard(k) == 0 for k in client.keys("ems:registered:*"))
    finally:
        client.close()


def stop_all(workers: Sequence[harness.Worker]) -> None:
    """Stop every worker, together (``pipeline_harness.stop_workers``)."""
    harness.stop_workers(workers)


def expected_event_ids(rounds: Sequence[dict]) -> set[str]:
    """``ladder/round_id/player`` of every participation of the distinct rounds."""
    seen: dict[tuple[str, str], dict] = {}
    for r in rounds:
        seen.setdefault((r["ladder"], r["round_id"]), r)
    return {f"{r['ladder']}/{r['round_id']}/{s['player']}" for r in seen.values() for s in r["standings"]}


def read_topic(bootstrap: str, topic: str, timeout_s: float = 120.0) -> list[tuple[bytes | None, bytes]]:
    """Every (key, value) on ``topic`` up to its end (duplicates included): past the end offsets
    the broker reports, until a poll returns nothing (the embedded broker's ListOffsets(LATEST)
    is the base offset of a partition's last batch + 1, short of the end when that batch holds
    many records: stream/stack/broker.py)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        parts = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        assert parts, f"topic {topic} does not exist"
        consumer.assign(parts)
        consumer.seek_to_beginning()
        end = consumer.end_offsets(parts)
        out: list[tuple[bytes | None, bytes]] = []
        deadline = time.monotonic() + timeout_s
        empty_polls = 0  # in a row, once past the reported ends (a slow fetch can come back empty once)
        while empty_polls < 2:
            assert time.monotonic() < deadline, f"could not read {topic} to its end"
            fetched = [(r.key, r.value) for records in consumer.poll(timeout_ms=500).values() for r in records]
            out += fetched
            past_ends = all(consumer.position(tp) >= end[tp] for tp in parts)
            empty_polls = empty_polls + 1 if not fetched and past_ends else 0
        return out
    finally:
        consumer.close()


def assert_events_complete(bootstrap: str, prefix: str, rounds: Sequence[dict]) -> int:
    """Every expected RatingChange is on ``rating-changes``, each event_id with one content.
    Returns the number of events read (duplicates included)."""
    wanted = expected_event_ids(rounds)
    events = read_topic(bootstrap, f"{prefix}rating-changes")
    by_id = harness.events_by_id(events)
    assert set(by_id) == wanted, f"missing {sorted(wanted - set(by_id))[:5]}, unexpected {sorted(set(by_id) - wanted)[:5]}"
    differing = [i for i, contents in by_id.items() if len(contents) != 1]
    assert not differing, f"re-emitted events differ from the first: {differing[:5]}"
    return len(events)
