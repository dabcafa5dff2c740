"""hiredis packing writes redis-py's bytes, and a client using it works against a real Redis."""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis
from redis.asyncio.connection import Connection

from stream.store.packing import HiredisPacking, use_hiredis_packing

SAMPLES = [
    ("SET", "k", 0.1), ("SET", "ü|{L|p}", b"\x00\xff\r\n"), ("EVALSHA", "abc", 2, "k1", "k2", -0.0, 1e300, 10**19),
    ("SCRIPT LOAD", "return 1"), (b"CONFIG GET", b"maxmemory"), ("SET", "k", memoryview(b"view")),
]


class Packed(HiredisPacking, Connection):
    pass


def test_same_bytes_as_redis_py() -> None:
    plain, fast = Connection(), Packed()
    for args in SAMPLES:
        assert b"".join(fast.pack_command(*args)) == b"".join(plain.pack_command(*args)), args


def test_client_round_trips_through_a_real_redis(redis_url: str) -> None:
    async def body() -> None:
        client = aioredis.Redis.from_url(redis_url)
        use_hiredis_packing(client)
        use_hiredis_packing(client)
        assert issubclass(client.connection_pool.connection_class, HiredisPacking)
        pipe = client.pipeline(transaction=False)
        pipe.set("ü", b"\x00\xff")
        pipe.hset("h", mapping={"a": 1.5, "b": "x y"})
        pipe.get("ü")
        pipe.hgetall("h")
        assert (await pipe.execute())[2:] == [b"\x00\xff", {b"a": b"1.5", b"b": b"x y"}]
        assert await client.script_load("return 7") and await client.eval("return ARGV[1]", 0, "z") == b"z"
        await client.aclose()

    asyncio.run(body())
