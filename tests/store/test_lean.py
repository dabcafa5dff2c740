"""LeanPipeline (the Store's pipeline on a single Redis) answers as redis-py's pipeline does, and a
task cancelled anywhere in it never leaves a half-read connection in the pool."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
import redis.asyncio as aioredis
from redis.exceptions import NoScriptError, ResponseError

from stream.connections import redis_client
from stream.settings import Settings
from stream.store.lean import LeanPipeline, lean_capable, response_callbacks
from stream.store.store import Store
from test_redis_cancel import count_dropped_cancels

T = TypeVar("T")


def run(url: str, body: Callable[[aioredis.Redis], Awaitable[T]], **options: Any) -> T:
    async def main() -> T:
        client = aioredis.Redis.from_url(url, **options)
        Store(client, history_length=5)  # hiredis packing + cancel safety, as the service's clients
        try:
            return await body(client)
        finally:
            await client.aclose()

    return asyncio.run(main())


def queue(pipe: Any) -> None:
    pipe.sadd("s", "a", "b")
    pipe.zadd("z", {"x": 1, "y": 2.5})
    pipe.zrange("z", 0, -1, withscores=True)
    pipe.hset("h", mapping={"f": "ü", "n": 3})
    pipe.hget("h", "f")
    pipe.hmget("h", ["f", "n", "missing"])
    pipe.hexists("h", "f")
    pipe.hgetall("h")
    pipe.smembers("s")
    pipe.rpush("l", "\x00ü\r\n".encode(), 1.5)
    pipe.lrange("l", 0, -1)
    pipe.execute_command("EVAL", "return {1, 'two', {3}}", 0)


@pytest.mark.parametrize("decode", [False, True])
def test_same_replies_as_redis_py(redis_url: str, decode: bool) -> None:
    async def body(client: aioredis.Redis) -> tuple[list[Any], list[Any]]:
        assert lean_capable(client)
        out = []
        for make in (lambda: client.pipeline(transaction=False), lambda: LeanPipeline(client, response_callbacks(client))):
            await client.flushdb()
            pipe = make()
            queue(pipe)
            out.append(await pipe.execute())
        return out[0], out[1]

    expected, lean = run(redis_url, body, decode_responses=decode)
    assert lean == expected
    assert [type(x) for x in lean] == [type(x) for x in expected]


def test_a_big_pipeline_is_read_across_many_socket_reads(redis_url: str) -> None:
    async def body(client: aioredis.Redis) -> list[Any]:
        pipe = LeanPipeline(client, response_callbacks(client))
        for i in range(3000):
            pipe.execute_command("ECHO", f"{i}" * 50)
        return await pipe.execute()

    assert run(redis_url, body) == [f"{i}".encode() * 50 for i in range(3000)]


def test_the_first_error_is_raised_after_every_reply_is_read(redis_url: str) -> None:
    async def body(client: aioredis.Redis) -> tuple[str, bytes | None, int]:
        pipe = LeanPipeline(client, response_callbacks(client))
        pipe.set("k", "v")
        pipe.hget("k", "f")  # WRONGTYPE
        pipe.execute_command("EVALSHA", "0" * 40, 0)  # NOSCRIPT, after the first error
        pipe.set("after", "1")
        with pytest.raises(ResponseError) as raised:
            await pipe.execute()
        assert not isinstance(raised.value, NoScriptError)
        # the connection went back to the pool in step: the next call reads its own reply
        return str(raised.value), await client.get("after"), len(client.connection_pool._available_connections)

    message, after, pooled = run(redis_url, body)
    assert message.startswith("Command # 2 (HGET k f) of pipeline caused error") and "WRONGTYPE" in message
    assert after == b"1" and pooled == 1


def test_store_reloads_scripts_after_noscript(redis_url: str) -> None:
    async def body(client: aioredis.Redis) -> list[Any]:
        store = Store(client, history_length=5)
        await store.load_scripts()
        await client.script_flush()
        with pytest.raises(NoScriptError):
            pipe = LeanPipeline(client, response_callbacks(client))
            store._eval(pipe, "load_players", ["p"], ["#mu"])
            await pipe.execute()
        return await store._run(lambda pipe: store._eval(pipe, "load_players", ["p"], ["#mu", "state"]))

    assert run(redis_url, body) == [[b"nan", [None]]]


def test_the_store_uses_it_on_one_server_only(redis_url: str, redis_cluster_url: str) -> None:
    async def body() -> tuple[bool, bool, bool]:
        single = Store(redis_client(Settings(redis_url=redis_url)), history_length=5)
        layout = Store(redis_client(Settings(redis_url=redis_url)), history_length=5, cluster=True)
        cluster = Store(redis_client(Settings(redis_url=redis_cluster_url, redis_cluster=True)), history_length=5)
        try:
            return single._lean is not None, layout._lean is not None, cluster._lean is not None
        finally:
            for store in (single, layout, cluster):
                await store.close()

    assert asyncio.run(body()) == (True, True, False)


def test_a_cancelled_store_call_never_leaves_a_half_read_connection(redis_url: str) -> None:
    """Store calls cancelled at random moments (writing, waiting for, or reading replies): each
    raises CancelledError, and every later call on the pool gets its own replies."""
    cancels = 300

    async def body(client: aioredis.Redis) -> tuple[int, int]:
        store = Store(client, history_length=5)
        await store.load_scripts()
        players = [f"{{L|p{i}}}" for i in range(400)]
        fields = ["#mu", "state"]

        async def work() -> str:
            while True:
                requested = asyncio.current_task().cancelling()  # type: ignore[union-attr]
                await store._run(lambda pipe: [store._eval(pipe, "load_players", players[i:i + 20], fields)
                                               for i in range(0, len(players), 20)])
                if asyncio.current_task().cancelling() > requested:  # type: ignore[union-attr]
                    return "the cancel was dropped"

        async def probe(k: int) -> None:
            # whichever connection the pool hands out next answers this call, not an old one
            (echo,) = await store._run(lambda pipe: pipe.execute_command("ECHO", f"probe{k}"))
            assert echo == f"probe{k}".encode()

        return await count_dropped_cancels(work, cancels, 3, after=probe)

    cancelled, dropped = run(redis_url, body, socket_timeout=10.0)
    assert dropped == 0, f"{dropped} of {cancelled} cancellations dropped"
