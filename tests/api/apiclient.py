"""Run a coroutine against the read API served on a real socket (aiohttp TestServer) over a real Redis."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import redis.asyncio as aioredis
from aiohttp.test_utils import TestClient, TestServer

from stream.api.app import create_app
from stream.api.health import KafkaProbe
from stream.settings import Settings


def with_client(redis_url: str, body: Callable[[TestClient], Awaitable[Any]], *, probe: KafkaProbe | None = None,
                **settings: Any) -> Any:
    async def go() -> Any:
        r = aioredis.Redis.from_url(redis_url)
        client = TestClient(TestServer(create_app(r, Settings(redis_url=redis_url, **settings), probe=probe)))
        await client.start_server()
        try:
            return await body(client)
        finally:
            await client.close()
            await r.aclose()
    return asyncio.run(go())


def get_all(redis_url: str, paths: list[str], **settings: Any) -> list[tuple[int, Any]]:
    """GET every path in one server (status, JSON body)."""
    async def body(client: TestClient) -> list[tuple[int, Any]]:
        out = []
        for path in paths:
            resp = await client.get(path)
            out.append((resp.status, await resp.json()))
        return out
    return with_client(redis_url, body, **settings)  # type: ignore[no-any-return]
