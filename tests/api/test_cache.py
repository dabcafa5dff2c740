"""The read API's response cache (stream/api/cache.py): alone with a fake clock, and through the app
over a real Redis (a cached answer is the fresh one as soon as the ladder's version moves)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
import redis
from aiohttp.test_utils import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st

from apiclient import with_client
from readside_data import LADDER, Seeded, seed
from stream.api import app as api_app
from stream.api.cache import ResponseCache
from stream.store import keys


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make(ttl_s: float = 1.0, max_bytes: int = 1000, max_entry_bytes: int = 100,
         fresh_s: float = 0.0) -> tuple[ResponseCache, Clock]:
    clock = Clock()
    return ResponseCache(ttl_s=ttl_s, fresh_s=fresh_s, max_bytes=max_bytes, max_entry_bytes=max_entry_bytes,
                         clock=clock), clock


def test_hit_while_the_version_holds_and_the_ttl_lasts() -> None:
    cache, clock = make()
    calls: list[bytes] = []

    async def compute(value: bytes) -> bytes:
        calls.append(value)
        return value

    async def go() -> list[bytes]:
        out = [await cache.get("k", 1, lambda: compute(b"a"))]
        out.append(await cache.get("k", 1, lambda: compute(b"b")))  # same version: cached
        out.append(await cache.get("k", 2, lambda: compute(b"c")))  # version moved
        clock.now = 0.99
        out.append(await cache.get("k", 2, lambda: compute(b"d")))
        clock.now = 1.0  # computed at 0.0: too old now
        out.append(await cache.get("k", 2, lambda: compute(b"e")))
        out.append(await cache.get("other", 2, lambda: compute(b"f")))
        return out

    assert asyncio.run(go()) == [b"a", b"a", b"c", b"c", b"e", b"f"]
    assert calls == [b"a", b"c", b"e", b"f"]


def test_a_fresh_answer_needs_no_version() -> None:
    cache, clock = make(fresh_s=0.1)

    async def go() -> list[bytes | None]:
        out: list[bytes | None] = [cache.fresh("k")]  # nothing cached
        await cache.get("k", 1, lambda: asyncio.sleep(0, b"a"))
        clock.now = 0.09
        out.append(cache.fresh("k"))
        clock.now = 0.1
        out.append(cache.fresh("k"))
        return out

    assert asyncio.run(go()) == [None, b"a", None]


def test_concurrent_misses_share_one_computation_and_errors_are_not_kept() -> None:
    cache, _ = make()
    calls = 0

    async def slow() -> bytes:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.05)
        return b"x"

    async def failing() -> bytes:
        await asyncio.sleep(0.01)
        raise ValueError("boom")

    async def go() -> tuple[list[Any], list[Any]]:
        shared = await asyncio.gather(*(cache.get("k", 1, slow) for _ in range(10)))
        errors = await asyncio.gather(*(cache.get("e", 1, failing) for _ in range(3)), return_exceptions=True)
        return shared, errors

    shared, errors = asyncio.run(go())
    assert shared == [b"x"] * 10 and calls == 1
    assert all(isinstance(e, ValueError) for e in errors) and len(errors) == 3
    assert "e" not in cache._entries  # noqa: SLF001 - nothing kept for a failure


def test_size_bounds_least_recently_used_out() -> None:
    cache, _ = make(max_bytes=250, max_entry_bytes=100)

    async def put(key: str, size: int) -> bytes:
        return await cache.get(key, 0, lambda: asyncio.sleep(0, b"x" * size))

    async def go() -> None:
        await put("a", 100)
        await put("b", 100)
        await put("a", 100)  # a hit: "a" is now the most recently used
        await put("c", 100)  # 300 > 250: "b" goes
        await put("big", 101)  # larger than an entry may be: answered, not kept

    asyncio.run(go())
    assert list(cache._entries) == ["a", "c"] and cache.size == 200  # noqa: SLF001


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["write", "write+version", "tick", "read"]),
                          st.floats(min_value=0.0, max_value=0.6)), max_size=40))
def test_an_answer_is_never_staler_than_the_ttl_nor_older_than_a_settled_version(ops: list[tuple[str, float]]) -> None:
    """Against a store that changes (with or without moving the version) as time passes, every read
    (a fresh answer, else one under the current version) returns a value the store held within the
    last ttl_s, and at least the value of every version move older than fresh_s."""
    cache, clock = make(ttl_s=1.0, fresh_s=0.25)
    value, version = 0, 0
    history: list[tuple[float, int]] = [(0.0, 0)]  # (from when, value)
    moves: list[tuple[float, int]] = []  # (when, value) of each version move

    async def go() -> None:
        nonlocal value, version
        for op, dt in ops:
            if op == "tick":
                clock.now += dt
            elif op.startswith("write"):
                value += 1
                history.append((clock.now, value))
                if op == "write+version":
                    version += 1
                    moves.append((clock.now, value))
            else:
                current = str(value).encode()
                got = int(cache.fresh("k") or await cache.get("k", version, lambda: asyncio.sleep(0, current)))
                held_since = [v for t, v in history if t <= clock.now - 1.0]
                oldest_allowed = max([held_since[-1]] if held_since else [0])
                assert oldest_allowed <= got <= value
                assert all(got >= moved for when, moved in moves if when <= clock.now - 0.25)

    asyncio.run(go())


@pytest.fixture()
def seeded(redis_url: str) -> Seeded:
    return seed(redis_url)


Change = Callable[[redis.Redis], object]


def answers_between(redis_url: str, path: str, changes: list[tuple[Change | None, float]]) -> list[Any]:
    """GET ``path`` once, then once after each (change to Redis, seconds waited), in one server."""
    sync = redis.Redis.from_url(redis_url)

    async def get(client: TestClient) -> Any:
        resp = await client.get(path)
        assert resp.status == 200
        return await resp.json()

    async def body(client: TestClient) -> list[Any]:
        seen = [await get(client)]
        for change, wait_s in changes:
            if change is not None:
                change(sync)
            await asyncio.sleep(wait_s)
            seen.append(await get(client))
        return seen

    try:
        return with_client(redis_url, body)  # type: ignore[no-any-return]
    finally:
        sync.close()


def test_the_app_answers_afresh_when_the_ladder_moves(redis_url: str, seeded: Seeded,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A cached leaderboard holds while nothing moved the ladder's version; a rated round (rounds_rated,
    updated_at) brings the new answer once CACHE_FRESH_S passed; a change that moves no version
    shows after the TTL."""
    monkeypatch.setattr(api_app, "CACHE_TTL_S", 1.0)

    def rated(r: redis.Redis) -> None:
        r.zadd(keys.leaderboard(LADDER), {"later": 10_000.0})
        r.hincrby(keys.ladder(LADDER), "rounds_rated", 1)

    seen = answers_between(redis_url, f"/api/ladders/{LADDER}/leaderboard?limit=3", [
        (lambda r: r.zadd(keys.leaderboard(LADDER), {"late": 9999.0}), 0.0),  # a player updated, round not rated yet
        (None, 1.1),  # past the TTL
        (rated, api_app.CACHE_FRESH_S)])
    assert [page["rows"][0]["player"] for page in seen] == [seeded.ranking()[0], seeded.ranking()[0], "late", "later"]


def test_predictions_follow_the_players_ratings(redis_url: str, seeded: Seeded) -> None:
    """A prediction is cached under its players' (mu, sigma): a rating change gives a new one once
    CACHE_FRESH_S passed (no version or TTL involved), an unrelated change keeps it."""
    seen = answers_between(redis_url, f"/api/ladders/{LADDER}/predict?players=p01,p02", [
        (lambda r: r.hset(keys.player(LADDER, "p03"), "mu", "9999"), api_app.CACHE_FRESH_S),
        (lambda r: r.hset(keys.player(LADDER, "p01"), mapping={"mu": "9999", "sigma": "50"}), api_app.CACHE_FRESH_S)])
    first = [answer["players"][0]["win_probability"] for answer in seen]
    assert first[0] == first[1] < 0.99 and first[2] > 0.99
