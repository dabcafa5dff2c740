"""The read API's bounds: event streams end quietly when the client goes away and are capped,
/api/ladders is paginated, /health reports Redis and Kafka separately (real redis-server; Kafka
unreachable here, the reachable case is in tests/cli/test_rejected.py)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest
import redis
from aiohttp.test_utils import TestClient
from prometheus_client import REGISTRY

from apiclient import with_client
from readside_data import LADDER, seed
from stream.api import app as api_app
from stream.api.health import KafkaProbe
from stream.settings import Settings
from stream.stack.ports import free_port
from stream.store import keys

EVENTS = f"/api/ladders/{LADDER}/events"
EVENTS_ROUTE = "/api/ladders/{ladder}/events"


def _requests(status: str) -> float:
    return REGISTRY.get_sample_value("ems_api_requests_total", {"route": EVENTS_ROUTE, "status": status}) or 0.0


async def _first_event(client: TestClient) -> Any:
    resp = await client.get(EVENTS)
    assert resp.status == 200
    line = await resp.content.readline()
    assert line.startswith(b"event: update")
    return resp


def test_closed_event_streams_end_quietly(redis_url: str, caplog: pytest.LogCaptureFixture,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Tabs that close (the client drops its connection) while the ladder keeps changing: no ERROR
    line, no 500, and the open-stream count is back to zero."""
    seed(redis_url)
    monkeypatch.setattr(api_app, "SSE_POLL_S", 0.02)
    errors_before = _requests("500")
    sync = redis.Redis.from_url(redis_url)

    async def body(client: TestClient) -> int:
        for i in range(5):
            resp = await _first_event(client)
            resp.close()  # the tab closes
            sync.hset(keys.ladder(LADDER), "updated_at", f"{1_800_000_000 + i}")  # something to write next
            await asyncio.sleep(0.15)
        return client.app[api_app.STREAMS_KEY][0]

    with caplog.at_level(logging.DEBUG):
        open_streams = with_client(redis_url, body)
    sync.close()
    assert open_streams == 0
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert _requests("500") == errors_before


def test_event_streams_are_capped(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seed(redis_url)
    monkeypatch.setattr(api_app, "SSE_POLL_S", 0.02)

    async def body(client: TestClient) -> tuple[Any, ...]:
        first = await _first_event(client)
        second = await client.get(EVENTS)
        refused = (second.status, second.headers.get("Retry-After"), (await second.json())["error"])
        first.close()
        await asyncio.sleep(0.2)  # the server notices the closed stream
        third = await _first_event(client)
        third.close()
        return refused

    assert with_client(redis_url, body, api_max_event_streams=1) == (503, "30", "too_many_streams")


def test_ladders_are_paginated(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    names = [f"l{i:03d}" for i in range(7)]
    client.sadd(keys.ladders(), *names)
    client.close()

    async def body(c: TestClient) -> Any:
        return [await (await c.get(path)).json() for path in
                ("/api/ladders?limit=3", "/api/ladders?offset=6&limit=3", "/api/ladders?limit=0")]

    first, last, bad = with_client(redis_url, body)
    assert first["total"] == 7 and [l["ladder"] for l in first["ladders"]] == names[:3]
    assert [l["ladder"] for l in last["ladders"]] == names[6:]
    assert bad["error"] == "bad_request"


def test_health_reports_an_unreachable_kafka_as_degraded(redis_url: str) -> None:
    settings = Settings(redis_url=redis_url, kafka_bootstrap=f"127.0.0.1:{free_port()}")
    probe = KafkaProbe(settings).start()
    deadline = time.monotonic() + 30
    while probe.health().ok is None and time.monotonic() < deadline:  # the first check in the background
        time.sleep(0.1)
    probe.stop()
    health = probe.health()
    assert health.ok is False and health.error and health.lag is None

    async def body(client: TestClient) -> Any:
        resp = await client.get("/health")
        return resp.status, await resp.json()

    status, data = with_client(redis_url, body, probe=probe, kafka_bootstrap=settings.kafka_bootstrap)
    assert status == 200 and data["status"] == "degraded" and data["redis"] is True
    assert data["kafka"]["ok"] is False and data["kafka"]["error"]
