"""The asyncio Redis clients the store and the read queries accept: one server or a Cluster.

``stream.connections.redis_client`` builds a ``RedisCluster`` when ``REDIS_CLUSTER`` is set and a
plain ``Redis`` otherwise; both offer the commands and non-transactional pipelines used here.
"""

from __future__ import annotations

from typing import TypeAlias

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.asyncio.cluster import ClusterPipeline, RedisCluster

AsyncRedis: TypeAlias = aioredis.Redis | RedisCluster
AsyncPipeline: TypeAlias = Pipeline | ClusterPipeline


def as_text(raw: bytes | str) -> str:
    """A reply as text (the service's clients do not decode replies: redis-py types them bytes | str)."""
    return raw.decode() if isinstance(raw, bytes) else raw


def as_bytes(raw: bytes | str) -> bytes:
    """A reply as bytes (see :func:`as_text`)."""
    return raw if isinstance(raw, bytes) else raw.encode()
