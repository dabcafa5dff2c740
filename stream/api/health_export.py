"""Exports each ladder's rating health as Prometheus metrics (``metrics.LADDER_HEALTH``).

A task of the API's loop reads every ladder's health from Redis every :data:`HEALTH_EXPORT_S`
(``store.health.ladder_health``; never per scrape), so every process serving ``/metrics`` (each
worker, ``stream api``) exports the same figures, whichever worker scored the ladder.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable

from aiohttp import web

from stream.pipeline import metrics
from stream.store import health as store_health
from stream.store import queries
from stream.store.client import AsyncRedis

log = logging.getLogger(__name__)

HEALTH_EXPORT_S = 15.0
"""Seconds between two reads of the ladders' rating health."""


async def refresh(client: AsyncRedis) -> int:
    """Read every ladder's rating health into the exported metrics; returns how many ladders have one."""
    found = {}
    for ladder in await queries.ladders(client):
        health = await store_health.ladder_health(client, ladder, climbers=1)
        if health is not None:
            found[ladder] = health
    metrics.LADDER_HEALTH.update(found)
    return len(found)


def exporter(client_of: web.AppKey[AsyncRedis]) -> Callable[[web.Application], AsyncIterator[None]]:
    """An aiohttp cleanup context running :func:`refresh` every HEALTH_EXPORT_S while the app runs."""

    async def run(app: web.Application) -> AsyncIterator[None]:
        async def loop() -> None:
            while True:
                try:
                    await refresh(app[client_of])
                except Exception as exc:  # noqa: BLE001 - Redis down: try again next time
                    log.debug("rating health export: %s: %s", type(exc).__name__, exc)
                await asyncio.sleep(HEALTH_EXPORT_S)

        task = asyncio.get_running_loop().create_task(loop())
        yield
        task.cancel()

    return run
