"""The asyncio Redis clients the store and the read queries accept: one server or a Cluster.

``stream.connections.redis_client`` builds a ``RedisCluster`` when ``REDIS_CLUSTER`` is set and a
plain ``Redis`` otherwise; both offer the commands and non-transactional pipelines used here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeAlias, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.asyncio.cluster import ClusterPipeline, RedisCluster

AsyncRedis: TypeAlias = aioredis.Redis | RedisCluster
AsyncPipeline: TypeAlias = Pipeline | ClusterPipeline
Item = TypeVar("Item")

READ_CHUNK = 2_000
"""Items per pipeline of :func:`pipelined` (bounds the client's buffer and one pipeline's work in Redis)."""


def as_text(raw: bytes | str) -> str:
    """A reply as text (the service's clients do not decode replies: redis-py types them bytes | str)."""
    return raw.decode() if isinstance(raw, bytes) else raw


def as_bytes(raw: bytes | str) -> bytes:
    """A reply as bytes (see :func:`as_text`)."""
    return raw if isinstance(raw, bytes) else raw.encode()


async def pipelined(r: AsyncRedis, items: Sequence[Item], reads: Callable[[Any, Item], object]) -> list[Any]:
    """The replies of the commands ``reads(pipe, item)`` queues for each item, in order: :data:`READ_CHUNK`
    items a pipeline (one round trip; none for no items)."""
    replies: list[Any] = []
    for lo in range(0, len(items), READ_CHUNK):
        pipe = r.pipeline(transaction=False)
        for item in items[lo:lo + READ_CHUNK]:
            reads(pipe, item)
        replies += await pipe.execute()
    return replies


async def read_each(r: AsyncRedis, items: Sequence[Item],
                    reads: Callable[[Any, Item], object]) -> AsyncIterator[tuple[Item, list[Any]]]:
    """(item, its replies) for each item, as :func:`pipelined` reads them (``reads`` queues as many
    commands for each), a pipeline's worth in memory at a time."""
    for lo in range(0, len(items), READ_CHUNK):
        chunk = items[lo:lo + READ_CHUNK]
        replies = await pipelined(r, chunk, reads)
        width = len(replies) // len(chunk)
        for i, item in enumerate(chunk):
            yield item, replies[width * i:width * (i + 1)]
