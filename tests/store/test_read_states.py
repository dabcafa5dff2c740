"""Store.read_states (what-if's read): the columns of load_states, by read-only commands only,
whether Redis has load_players.lua cached (EVALSHA_RO) or not (plain HMGETs)."""

from __future__ import annotations

import asyncio

import numpy as np
import redis
import redis.asyncio as aioredis

from stream.store import keys
from stream.store.store import LOAD_PLAYERS_SHA, Store


def test_read_states_equals_load_states_with_and_without_the_script(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    players = [f"p{i}" for i in range(1200)]  # more than one script call's players
    for i, p in enumerate(players[::2]):
        client.hset(keys.player("L", p), mapping={"state": bytes([i % 256]) * 40, "tier": "Gold", "last_seq": i + 1})
    client.close()
    asked = players + ["ghost"]

    async def go() -> tuple[object, object, object, str]:
        r = aioredis.Redis.from_url(redis_url)
        store = Store(r, history_length=10)
        try:
            cold = await store.read_states("L", asked)  # nothing cached yet: the HMGETs
            await store.load_scripts()
            warm = await store.read_states("L", asked)  # EVALSHA_RO
            want = await store.load_states([("L", p) for p in asked])
            return cold, warm, want, store._sha["load_players"]
        finally:
            await r.aclose()

    cold, warm, want, sha = asyncio.run(go())
    assert sha == LOAD_PLAYERS_SHA
    for got in (cold, warm):
        assert np.array_equal(got.last_seq, want.last_seq) and got.states == want.states and got.tiers == want.tiers
    assert want.states[1] is None and want.states[0] == bytes([0]) * 40 and want.last_seq[2] == 2
    stats = redis.Redis.from_url(redis_url, decode_responses=True).info("commandstats")
    assert "cmdstat_evalsha_ro" in stats  # the script path ran (after load_scripts)


def test_read_states_reports_rounds_in_flight(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    client.hset(keys.player("L", "a"), mapping={"state": b"x", "last_seq": 3, "queued_seq": 5})
    client.hset(keys.player("L", "b"), mapping={"state": b"y", "last_seq": 5, "queued_seq": 5})
    client.close()

    async def go() -> tuple[object, object]:
        r = aioredis.Redis.from_url(redis_url)
        store = Store(r, history_length=10)
        try:
            cold = await store.read_states("L", ["a", "b", "c"])
            await store.load_scripts()
            return cold, await store.read_states("L", ["a", "b", "c"])
        finally:
            await r.aclose()

    for got in asyncio.run(go()):
        assert got.queued_seq.tolist() == [5, 5, 0] and got.last_seq.tolist() == [3, 5, 0]
