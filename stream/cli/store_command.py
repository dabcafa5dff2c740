"""What the commands share: exit codes, one-line errors, ``--ladders``-style options (JSON text or its file),
and running a coroutine on a Redis client or a :class:`Store`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypeVar

import typer

from stream.connections import redis_client, redis_connection_errors, redis_error_message
from stream.settings import Settings

if TYPE_CHECKING:  # the Store imports numpy: only the commands that write load it (CLI start-up time)
    from stream.store.client import AsyncRedis
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


def bad_input(message: str) -> NoReturn:
    """:func:`fail` with EXIT_BAD_INPUT: a bad option, input file or configuration."""
    fail(message, EXIT_BAD_INPUT)


def json_option(option: str, name: str) -> tuple[str, Path | None]:
    """An option given as JSON text (starting with ``{``) or as the file holding it: the text, and
    the file (None: given as text); an unreadable file is exit 2."""
    if option.lstrip().startswith("{"):
        return option, None
    try:
        return Path(option).read_text(encoding="utf-8"), Path(option)
    except OSError as exc:
        bad_input(f"{name}: cannot read {option}: {exc.strerror}")


def run_on_redis(settings: Settings, work: Callable[[AsyncRedis], Awaitable[T]], *,
                 socket_timeout: float | None = None, write: bool = False) -> T:
    """Run ``work`` on a client of REDIS_URL (closed after); Redis unreachable (:func:`stream.cli.reach.require`,
    which also refuses to ``write`` to a Redis nobody chose) is exit 4 with one line."""
    from stream.cli.reach import require

    require(settings, redis=True, write=write)

    async def go() -> T:
        client = redis_client(settings) if socket_timeout is None else redis_client(settings, socket_timeout=socket_timeout)
        try:
            return await work(client)
        finally:
            await client.aclose()

    try:
        return asyncio.run(go())
    except redis_connection_errors() as exc:
        fail(redis_error_message(settings, exc), EXIT_UNREACHABLE)


def run_with_store(settings: Settings, work: Callable[[Store], Awaitable[T]], *, write: bool = False) -> T:
    """Run ``work`` on a :class:`Store` over REDIS_URL (bulk socket timeout), as :func:`run_on_redis`."""
    from stream.store.store import Store

    return run_on_redis(settings, lambda client: work(Store(client, history_length=settings.history_length,
                                                            cluster=settings.redis_cluster)),
                        socket_timeout=BULK_SOCKET_TIMEOUT_S, write=write)
