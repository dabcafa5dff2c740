"""Serving the read API: its bounded Redis client, and :class:`ApiThread`, the API on its own event loop in
a thread (``stream worker``'s: a slow request never delays the pipeline's loop)."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

from aiohttp import web

from stream.api.app import create_app
from stream.api.health import KafkaProbe
from stream.connections import redis_client, redis_options
from stream.pipeline.worker_status import WorkerStatus
from stream.store.cancel import make_cancel_safe
from stream.settings import Settings
from stream.store.client import AsyncRedis

log = logging.getLogger(__name__)

#: Seconds a request waits for a free Redis connection of the bounded pool before it fails (500).
POOL_WAIT_S = 10.0
#: Seconds the thread waits for the server to start or stop.
START_TIMEOUT_S = 30.0
#: Seconds open connections (event streams) get to finish when the server stops.
SHUTDOWN_S = 1.0


def api_redis_client(settings: Settings) -> AsyncRedis:
    """The API's Redis client: at most API_REDIS_MAX_CONNECTIONS connections; a request waits for a
    free one (up to :data:`POOL_WAIT_S`) rather than opening more."""
    if settings.redis_cluster:  # per node: the cluster client's own bound
        return redis_client(settings, max_connections=settings.api_redis_max_connections)
    import redis.asyncio as aioredis

    pool = aioredis.BlockingConnectionPool.from_url(
        settings.redis_url, max_connections=settings.api_redis_max_connections, timeout=POOL_WAIT_S,
        **redis_options(settings))
    client = aioredis.Redis(connection_pool=pool)
    client.auto_close_connection_pool = True
    make_cancel_safe(client)
    return client


def build_app(settings: Settings, client: AsyncRedis, probe: KafkaProbe | None,
              status: WorkerStatus | None = None) -> web.Application:
    """The API over ``client``, closing it (and stopping ``probe``) at cleanup; ``status``: the
    pipeline of this process (/live, /ready)."""
    app = create_app(client, settings, probe=probe, status=status)

    async def close(_: web.Application) -> None:
        if probe is not None:
            probe.stop()
        await client.aclose()

    app.on_cleanup.append(close)
    return app


class ApiThread:
    """The read API on ``host:port`` in a daemon thread with its own event loop; a context manager.
    ``probe``: check Kafka for /health and /ready; ``status``: this process's pipeline, for /live and /ready."""

    def __init__(self, settings: Settings, *, host: str | None = None, port: int | None = None,
                 probe: bool = True, status: WorkerStatus | None = None) -> None:
        self.settings = settings
        self.status = status
        self.host = host or settings.web_host
        self.port = port if port is not None else settings.web_port
        self._probe = probe
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._run, name="read-api", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._start())
        except BaseException as exc:  # reported by start()
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()

    async def _start(self) -> None:
        probe = KafkaProbe(self.settings).start() if self._probe else None
        self._runner = web.AppRunner(build_app(self.settings, api_redis_client(self.settings), probe, self.status),
                                     shutdown_timeout=SHUTDOWN_S)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, self.port).start()
        log.info("read API on http://%s:%d/", self.host, self.port)

    def start(self) -> "ApiThread":
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT_S):
            raise TimeoutError("the read API did not start")
        if self._error is not None:
            raise self._error
        return self

    def stop(self) -> None:
        """Close the server and its Redis client, then end the thread."""
        if not self._thread.is_alive():
            return

        async def cleanup() -> None:
            if self._runner is not None:
                await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(cleanup(), self._loop).result(START_TIMEOUT_S)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(START_TIMEOUT_S)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def __enter__(self) -> "ApiThread":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
