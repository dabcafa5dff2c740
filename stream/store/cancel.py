"""redis.asyncio connections that never drop a task's cancellation.

redis-py bounds each write with ``asyncio.wait_for(send, socket_timeout)``. On Python 3.11,
``wait_for`` returns the inner result when the write finishes in the same loop iteration as a
cancellation of the calling task, and the ``CancelledError`` is lost (CPython gh-86296, fixed
in 3.12 where ``wait_for`` is built on ``asyncio.timeout``). The caller then runs on as if
nothing happened: measured with short pipelines cancelled at random moments, a third of the
cancellations were dropped, and a phase-one barrier cancelled by a timeout (or a rebalance)
polled Redis for ever. :class:`CancelSafeSend` re-raises such a cancellation after the write.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stream.store.client import AsyncRedis


class CancelSafeSend:
    """Mixin for a redis.asyncio connection class: a cancellation requested while a command was
    being written is raised once the write returns (the connection is dropped first: the
    command's reply will never be read, so the connection must not serve another call)."""

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        task = asyncio.current_task()
        requested = task.cancelling() if task is not None else 0
        await super().send_packed_command(command, check_health)  # type: ignore[misc]
        if task is not None and task.cancelling() > requested:
            await self.disconnect(nowait=True)  # type: ignore[attr-defined]
            raise asyncio.CancelledError()


def _safe(base: type) -> type:
    return base if issubclass(base, CancelSafeSend) else type(f"CancelSafe{base.__name__}", (CancelSafeSend, base), {})


def make_cancel_safe(client: AsyncRedis) -> None:
    """Make the connections ``client`` opens from now on :class:`CancelSafeSend` (idempotent).
    A single Redis: its pool's connection class. A Redis Cluster: the class every node's pool
    is built with (the nodes known now and those discovered later)."""
    pool = getattr(client, "connection_pool", None)
    if pool is not None:
        pool.connection_class = _safe(pool.connection_class)
        return
    manager = client.nodes_manager  # type: ignore[union-attr]
    manager.connection_kwargs["connection_class"] = _safe(manager.connection_kwargs.get("connection_class")
                                                          or _default_connection())
    for node in [*manager.startup_nodes.values(), *manager.nodes_cache.values()]:
        node.connection_class = _safe(node.connection_class)


def _default_connection() -> type:
    from redis.asyncio.connection import Connection

    return Connection
