"""What the commands that write Redis directly share (backfill, export, import, erase): running a
coroutine on a :class:`Store`, and their exit codes."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import NoReturn, TypeVar

import typer

from stream.connections import redis_client, redis_connection_errors, redis_error_message
from stream.settings import Settings
from stream.store.store import Store

EXIT_NOT_FOUND = 1
EXIT_BAD_INPUT = 2
EXIT_UNREACHABLE = 4

BULK_SOCKET_TIMEOUT_S = 120.0
"""Socket timeout of these commands' Redis client: a bulk pipeline may keep Redis busy for seconds."""

T = TypeVar("T")


def fail(message: str, code: int) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``code``."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def run_with_store(settings: Settings, work: Callable[[Store], Awaitable[T]]) -> T:
    """Run ``work`` on a store over REDIS_URL; Redis unreachable is exit 4 with a one-line message."""
    async def go() -> T:
        store = Store(redis_client(settings, socket_timeout=BULK_SOCKET_TIMEOUT_S), history_length=settings.history_length,
                      cluster=settings.redis_cluster)
        try:
            return await work(store)
        finally:
            await store.close()

    try:
        return asyncio.run(go())
    except redis_connection_errors() as exc:  # a clear one-liner, never the URL's password
        fail(redis_error_message(settings, exc), EXIT_UNREACHABLE)
