"""Shared fixtures: a private redis-server per test session (and the broker, see tests/stream)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stream.stack.redis_server import RedisServer


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """A redis-server of this test session only, on a free port."""
    server = RedisServer().start()
    yield server
    server.stop()


@pytest.fixture()
def redis_url(redis_server: RedisServer) -> Iterator[str]:
    """URL of the session's private Redis, flushed before each test."""
    import redis

    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    client.close()
    yield redis_server.url
