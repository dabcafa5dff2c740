"""``/live`` and ``/ready``: the worker's Kubernetes probes (README "Probes").

* ``/live`` looks only inside the process: 200 while the pipeline's event loop ticks
  (``WorkerStatus.beat``, every second) within LIVE_TIMEOUT_S; never fails because Redis or Kafka
  is unreachable (the worker waits for them; restarting it would not help). Served by the API's
  own thread, so a busy pipeline does not delay it. On the API alone (``stream api``, no
  pipeline) it answers 200 whenever it answers.
* ``/ready`` is 200 when all of: Redis answers a PING now; the last Kafka check (every 5 s,
  ``health.KafkaProbe``) reached the broker and is recent; the worker's consumer has completed a
  rebalance (its partitions are assigned) and is not in one; no SIGTERM drain has begun; and the
  lag in seconds (age of the oldest uncommitted record) of every ``rounds`` and ``player-updates``
  partition assigned to this worker is at most READY_MAX_LAG_S. Else 503, with each check's
  verdict in the body. It recovers by itself (no restart): every request checks again.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from aiohttp import web

from stream.api.health import CHECK_INTERVAL_S, CHECK_TIMEOUT_S, AGE_TIMEOUT_S, KafkaHealth
from stream.pipeline.worker_status import WorkerStatus
from stream.settings import Settings
from stream.store.client import AsyncRedis

PING_TIMEOUT_S = 2.0
"""Seconds /ready waits for Redis' PING."""
STALE_AFTER_S = 2 * CHECK_INTERVAL_S + CHECK_TIMEOUT_S + AGE_TIMEOUT_S
"""A Kafka check older than this does not count (the check thread is stuck or gone)."""


def live(status: WorkerStatus | None, settings: Settings) -> tuple[bool, dict[str, Any]]:
    """The liveness verdict and its body (see the module docstring)."""
    if status is None:
        return True, {"live": True}
    blocked = status.blocked_s()
    ok = blocked <= settings.live_timeout_s
    return ok, {"live": ok, "loop_blocked_s": round(blocked, 3), "live_timeout_s": settings.live_timeout_s}


async def redis_answers(client: AsyncRedis) -> tuple[bool, str | None]:
    """PING within :data:`PING_TIMEOUT_S`: (answered, the error's text if not)."""
    try:
        async with asyncio.timeout(PING_TIMEOUT_S):
            return bool(await client.ping()), None
    except Exception as exc:  # noqa: BLE001 - any failure means "not reachable"
        return False, f"{type(exc).__name__}: {exc}"[:200]


def kafka_verdict(kafka: KafkaHealth | None, now: float) -> tuple[bool, dict[str, Any]]:
    """The last Kafka check: reached and recent."""
    if kafka is None:
        return True, {"ok": None, "note": "not checked here"}
    fresh = kafka.checked_at is not None and now - kafka.checked_at <= STALE_AFTER_S
    ok = bool(kafka.ok) and fresh
    return ok, {"ok": ok, "checked_at": kafka.checked_at, "error": kafka.error if kafka.ok is False else None}


def lag_verdict(kafka: KafkaHealth | None, status: WorkerStatus | None,
                bound_s: float) -> tuple[bool, dict[str, Any]]:
    """The worst lag in seconds over the partitions assigned to this worker (all partitions the
    check saw, for the API alone), against ``bound_s``. A partition whose oldest record could not
    be read in time is listed as unknown and does not fail the check."""
    rows = (kafka.partitions if kafka is not None else None) or {}
    if status is not None and status.assigned is not None:
        rows = {tp: row for tp, row in rows.items() if tp in status.assigned}
    worst = max((age for _, age in rows.values() if age is not None), default=0.0)
    unknown = sorted(f"{topic}[{partition}]" for (topic, partition), (_, age) in rows.items() if age is None)
    over = sorted(f"{topic}[{partition}]" for (topic, partition), (_, age) in rows.items()
                  if age is not None and age > bound_s)
    return not over, {"ok": not over, "max_lag_s": round(worst, 3), "bound_s": bound_s, "over": over,
                      "unknown": unknown}


async def ready(client: AsyncRedis, kafka: KafkaHealth | None, status: WorkerStatus | None,
                settings: Settings) -> tuple[bool, dict[str, Any]]:
    """The readiness verdict and its body (see the module docstring)."""
    redis_ok, redis_error = await redis_answers(client)
    kafka_ok, kafka_body = kafka_verdict(kafka, time.time())
    assigned_body: dict[str, Any]
    if status is None:
        assigned_ok, assigned_body = True, {"ok": None, "note": "no pipeline in this process"}
    else:
        assigned_ok = status.assigned is not None and not status.rebalancing and not status.draining
        assigned_body = {"ok": assigned_ok, "partitions": None if status.assigned is None else len(status.assigned),
                         "rebalancing": status.rebalancing, "draining": status.draining}
    lag_ok, lag_body = lag_verdict(kafka, status, settings.ready_max_lag_s)
    ok = redis_ok and kafka_ok and assigned_ok and lag_ok
    return ok, {"ready": ok, "redis": {"ok": redis_ok, "error": redis_error}, "kafka": kafka_body,
                "assigned": assigned_body, "lag": lag_body}


def json_verdict(ok: bool, body: dict[str, Any]) -> web.Response:
    return web.json_response(body, status=200 if ok else 503)
