"""redis.asyncio connections that never drop a task's cancellation.

redis-py bounds each write with ``asyncio.wait_for``, which on Python 3.11 loses a cancellation that
lands in the loop iteration the write finishes in (CPython gh-86296; a third of them, measured: a
cancelled phase-one barrier polled Redis for ever). :class:`CancelSafeSend` re-raises it after the write.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from redis.asyncio.connection import Connection

if TYPE_CHECKING:
    from stream.store.client import AsyncRedis


class CancelSafeSend:
    """Mixin for a redis.asyncio connection class: a cancellation requested during a write is raised
    once it returns, the connection dropped first (the reply will never be read)."""

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
    """Make the connections ``client`` opens from now on :class:`CancelSafeSend` (idempotent): a single
    Redis's pool's, or every Cluster node's, known now or discovered later."""
    pool = getattr(client, "connection_pool", None)
    if pool is not None:
        pool.connection_class = _safe(pool.connection_class)
        return
    manager = client.nodes_manager  # type: ignore[union-attr]
    manager.connection_kwargs["connection_class"] = _safe(manager.connection_kwargs.get("connection_class")
                                                          or Connection)
    for node in [*manager.startup_nodes.values(), *manager.nodes_cache.values()]:
        node.connection_class = _safe(node.connection_class)
