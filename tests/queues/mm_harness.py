"""Helpers of the matchmaking service tests: tickets published keyed by queue, the topics read back,
worker environments with QUEUES."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path


import fault_harness as faults_h
import pipeline_harness as harness

DUEL = "duel"
OPEN = [{"after_s": 0, "max_gap": None, "min_quality": 0}]
"""A widening schedule that accepts any pairing at once (the tests check the service, not the pairing)."""


def queues(**entries: dict[str, object]) -> str:
    return json.dumps(entries)


def duel_queues(tick_s: float = 0.2, **extra: object) -> str:
    return queues(duel={"ladder": DUEL, "teams": 2, "team_size": 1, "tick_interval_s": tick_s, "widening": OPEN,
                        **extra})


def env(bootstrap: str, redis_url: str, prefix: str, tmp_path: Path, point: str = "", *, queues_json: str,
        **extra: str) -> dict[str, str]:
    return faults_h.fault_env(bootstrap, redis_url, prefix, tmp_path, point, QUEUES=queues_json, **extra)


def publish(bootstrap: str, topic: str, messages: Iterable[dict | bytes], *, key: str = DUEL) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    try:
        for m in messages:
            value = m if isinstance(m, bytes) else json.dumps(m).encode()
            k = key if isinstance(m, bytes) else str(m.get("queue", key))
            producer.send(topic, key=k.encode(), value=value)
        producer.flush()
    finally:
        producer.close()


def joins(prefix: str, players: Iterable[str], *, queue: str = DUEL) -> list[dict]:
    return [{"ticket_id": f"{prefix}{p}", "queue": queue, "players": [p]} for p in players]


def read_json(bootstrap: str, topic: str) -> list[dict]:
    return [json.loads(v) for _, v in faults_h.read_topic(bootstrap, topic)]


def wait_for(condition: Callable[[], bool], what: str, workers: list[harness.Worker] | None = None,
             timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            logs = "\n".join(w.log() for w in workers or [])
            raise AssertionError(f"timed out waiting for {what}\n{logs}")
        time.sleep(0.5)


def distinct_matches(matches: list[dict]) -> dict[str, dict]:
    """match_id -> the match; every copy of an id must have the same content (a re-emission)."""
    out: dict[str, dict] = {}
    for m in matches:
        if m["match_id"] in out:
            assert out[m["match_id"]] == m, f"two contents for match {m['match_id']}"
        out[m["match_id"]] = m
    return out


def assert_no_double_booking(matches: dict[str, dict]) -> None:
    """No ticket in two matches; no player in two matches (each test's players play once per phase)."""
    tickets = [t for m in matches.values() for t in m["tickets"]]
    assert len(tickets) == len(set(tickets)), "a ticket is in two matches"
    players = [p for m in matches.values() for team in m["teams"] for p in team]
    assert len(players) == len(set(players)), "a player is in two matches"
