"""A non-transactional pipeline for one Redis server, without redis-py's per-command machinery.

redis-py's ``Pipeline.execute`` spent most of a Store batch's time around the wire (chunked packing,
an awaited ``read_response`` per reply). :class:`LeanPipeline` packs the queued commands with hiredis
into one buffer, writes it once and reads the N replies from the connection's own hiredis reader.
Callers see the same replies (the connection's reader, redis-py's response callbacks), errors
(the first error reply raised annotated, after reading them all; ``Retry`` on connection errors);
any exception while reading disconnects the connection, so none goes back to the pool with unread
replies. Only for a ``redis.asyncio.Redis`` reading with hiredis in RESP2 (:func:`lean_capable`).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import hiredis
import redis.asyncio as aioredis
from redis._parsers.hiredis import NOT_ENOUGH_DATA, _AsyncHiredisParser
from redis.asyncio.connection import AbstractConnection
from redis.commands.core import AsyncCoreCommands
from redis.exceptions import ConnectionError, ResponseError, TimeoutError
from redis.utils import safe_str, truncate_text

from stream.store.packing import HiredisPacking

SERVER_CLOSED = "Connection closed by server."

Callback = Callable[..., Any]
Queued = tuple[tuple[Any, ...], Callback | None, dict[str, Any]]


def response_callbacks(client: aioredis.Redis) -> dict[str, Callback]:
    """``client``'s response callbacks as a plain dict keyed by upper-case command name (redis-py's
    own is case-insensitive, a Python-level lookup)."""
    return {str(name).upper(): callback for name, callback in client.response_callbacks.items()}


def lean_capable(client: object) -> bool:
    """Whether ``client`` can run :class:`LeanPipeline`: a single-server asyncio client whose
    connections pack with hiredis (UTF-8) and whose parser is hiredis speaking RESP2."""
    if not isinstance(client, aioredis.Redis):
        return False
    pool = client.connection_pool
    kwargs = pool.connection_kwargs
    return (issubclass(pool.connection_class, HiredisPacking)
            and issubclass(pool.connection_class, AbstractConnection)
            and kwargs.get("parser_class", _AsyncHiredisParser) is _AsyncHiredisParser
            and kwargs.get("protocol") in (None, 2, "2"))


if TYPE_CHECKING:  # typed as what it stands in for (redis-py's command methods are typed for its clients)
    from redis.asyncio.client import Pipeline as _Base
else:
    _Base = AsyncCoreCommands


class LeanPipeline(_Base):
    """Commands queued by redis-py's command methods, sent as one round trip by :meth:`execute`
    (not a redis-py ``Pipeline`` at run time: only the command methods, ``execute`` and ``len``)."""

    def __init__(self, client: aioredis.Redis, callbacks: dict[str, Callback]) -> None:
        """``callbacks``: :func:`response_callbacks` of ``client``, taken once per client."""
        self.redis = client
        self.callbacks = callbacks
        self.commands: list[Queued] = []

    def execute_command(self, *args: Any, **options: Any) -> "LeanPipeline":  # type: ignore[override]
        """Queue one command (redis-py's command methods call this)."""
        name = args[0]
        if not (isinstance(name, str) and name.isupper()):  # redis-py's methods send upper-case names
            name = str(safe_str(name)).upper()  # type: ignore[no-untyped-call]
        callback = self.callbacks.get(name)
        if callback is None:
            self.commands.append((args, None, {}))
        else:
            options.pop("keys", None)  # redis-py's client-side-cache hint, not a callback option
            if "NEVER_DECODE" in options:
                raise NotImplementedError(f"{args[0]}: NEVER_DECODE replies are not supported by LeanPipeline")
            self.commands.append((args, callback, options))
        return self

    def __len__(self) -> int:
        return len(self.commands)

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        """Send every queued command in one write and read their replies, in order; raise the first
        error reply (after reading them all), or with ``raise_on_error=False`` leave them in place."""
        commands = self.commands
        if not commands:
            return []
        pool = self.redis.connection_pool
        conn: Any = await pool.get_connection()  # type: ignore[no-untyped-call]
        try:
            packed = _pack(conn, commands)

            async def failed(error: Exception) -> None:
                await conn.disconnect()

            replies: list[Any] = await conn.retry.call_with_retry(
                lambda: _round_trip(conn, packed, len(commands)), failed)
        finally:
            await pool.release(conn)
        return await _finish(commands, replies, raise_on_error)


def _pack(conn: Any, commands: list[Queued]) -> bytes:
    """The commands as one RESP buffer (hiredis; redis-py's packer for arguments hiredis refuses)."""
    pack = hiredis.pack_command
    try:
        return b"".join([pack(args) for args, _, _ in commands])
    except TypeError:
        return b"".join(chunk for args, _, _ in commands for chunk in conn.pack_command(*args))


async def _send(conn: Any, packed: bytes) -> None:
    """Write ``packed`` as ``send_packed_command`` does (connect, health check, the same errors), bounded
    by ``asyncio.timeout`` in the calling task: redis-py's ``wait_for`` costs a task per write and on
    Python 3.11 can drop a cancellation (``stream.store.cancel``). Any exception disconnects."""
    if not conn.is_connected:
        await conn.connect_check_health(check_health=False)
    await conn.check_health()
    writer: Any = conn._writer
    timeout = conn.socket_timeout
    try:
        writer.write(packed)
        async with asyncio.timeout(timeout or None):  # None: no bound (socket_timeout unset)
            await writer.drain()
    except asyncio.TimeoutError:
        await conn.disconnect(nowait=True)
        raise TimeoutError("Timeout writing to socket") from None
    except OSError as e:
        await conn.disconnect(nowait=True)
        err_no, errmsg = ("UNKNOWN", e.args[0]) if len(e.args) == 1 else (e.args[0], e.args[1])
        raise ConnectionError(f"Error {err_no} while writing to socket. {errmsg}.") from e
    except BaseException:
        await conn.disconnect(nowait=True)
        raise


async def _round_trip(conn: Any, packed: bytes, n: int) -> list[Any]:
    """Write ``packed`` and read ``n`` replies with the connection's hiredis reader."""
    await _send(conn, packed)
    parser: Any = conn._parser
    if not isinstance(parser, _AsyncHiredisParser) or not parser._connected:
        raise ConnectionError(SERVER_CLOSED)
    reader: Any = parser._reader
    stream: Any = parser._stream
    size = parser._read_size
    timeout = conn.socket_timeout
    replies: list[Any] = []
    try:
        while True:
            reply = reader.gets()
            while reply is not NOT_ENOUGH_DATA:
                if isinstance(reply, ConnectionError):
                    raise reply
                replies.append(reply)
                if len(replies) == n:
                    if conn.health_check_interval:
                        conn.next_health_check = asyncio.get_running_loop().time() + conn.health_check_interval
                    return replies
                reply = reader.gets()
            async with asyncio.timeout(timeout or None):
                data = await stream.read(size)
            if not data:
                raise ConnectionError(SERVER_CLOSED)
            reader.feed(data)
    except asyncio.TimeoutError:
        await conn.disconnect(nowait=True)
        raise TimeoutError(f"Timeout reading from {conn._host_error()}") from None
    except OSError as e:
        await conn.disconnect(nowait=True)
        raise ConnectionError(f"Error while reading from {conn._host_error()} : {e.args}") from None
    except BaseException:
        await conn.disconnect(nowait=True)  # replies left unread: the connection must not be reused
        raise


async def _finish(commands: list[Queued], replies: list[Any], raise_on_error: bool) -> list[Any]:
    """Apply the commands' response callbacks and raise the first error reply (annotated)."""
    for i, (args, callback, options) in enumerate(commands):
        reply = replies[i]
        if isinstance(reply, ResponseError):
            if "EMPTY_RESPONSE" in options:
                replies[i] = options["EMPTY_RESPONSE"]
                continue
            if not raise_on_error:
                continue
            cmd = " ".join(map(safe_str, args))
            text: str = truncate_text(cmd)  # type: ignore[no-untyped-call]
            reply.args = (f"Command # {i + 1} ({text}) of pipeline caused error: {reply.args}",
                          *reply.args[1:])
            raise reply
        if callback is not None:
            options = {k: v for k, v in options.items() if k != "EMPTY_RESPONSE"}
            value = callback(reply, **options)
            replies[i] = await value if inspect.isawaitable(value) else value
    return replies
