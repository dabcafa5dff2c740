"""Retention (RETAIN_*): the sweeper deletes the results and fan-outs of old rounds, by count or
age, never those of a round still in the sweeper's ledger; ratings and round records stay."""

from __future__ import annotations

import asyncio
import json

import redis

from stream.pipeline.sweeper import sweep
from stream.store import keys, retention
from tests.stream import pipeline_harness as harness
from tests.stream.test_backfill import context
from tests.stream.test_snapshot import stream

DAY = 86_400.0


def kept(client: redis.Redis, ladder: str, round_ids: list[str]) -> tuple[list[str], list[str]]:
    results = [r for r in round_ids if client.exists(keys.round_results(ladder, r))]
    fanouts = [r for r in round_ids if client.exists(keys.round_perf(ladder, r))]
    return results, fanouts


def test_count_and_age_limits(redis_url: str) -> None:
    rounds = [dict(r, ladder="cup") for r in harness.synthetic_rounds(seed=8, count=40, ladders=("cup",), pool=12)]
    ids = [r["round_id"] for r in rounds]  # one round every 6 hours
    stream(redis_url, rounds)
    client = redis.Redis.from_url(redis_url)
    players_before = {k: client.hgetall(k) for k in client.scan_iter("ems:player:*")}
    client.zadd(keys.incomplete_rounds("cup"), {ids[30]: 0})  # as if its events were not all confirmed

    async def body() -> None:
        ctx = context(redis_url, retain_round_results=10, retain_fanouts_days=5.0, sweep_timeout_s=1e9)
        store = ctx.store
        now = harness.BASE_TIME + 40 * DAY / 4  # round i occurred (40 - i) / 4 days before now
        rules = retention.policies(ctx.settings)
        assert (await retention.trim(store, rules, now=now, limit=7)) == {"results": 7, "fanouts": 7}  # at most `limit`
        assert (await retention.trim(store, rules, now=now)) == {"results": 23, "fanouts": 13}
        results, fanouts = kept(client, "cup", ids)
        assert results == ids[30:]  # the last 10 by count
        assert fanouts == ids[20:]  # younger than 5 days: rounds 20.. (round 20 occurred exactly 5 days before)
        assert client.hget(keys.ladder("cup"), "results_trimmed_seq") == b"30"
        assert (await retention.trim(store, rules, now=now)) == {"results": 0, "fanouts": 0}
        await sweep(ctx)  # the sweeper applies the settings' policies, at the wall-clock time: all are old
        await store.close()

    asyncio.run(body())
    assert kept(client, "cup", ids) == (ids[30:], ids[30:])  # round 30 is in the ledger: nothing after it goes

    async def after_confirmation() -> None:
        client.zrem(keys.incomplete_rounds("cup"), ids[30])
        ctx = context(redis_url, retain_round_results=5)
        await sweep(ctx)
        await ctx.store.close()

    asyncio.run(after_confirmation())
    assert kept(client, "cup", ids)[0] == ids[35:]
    # ratings, histories and round records are untouched
    assert {k: client.hgetall(k) for k in client.scan_iter("ems:player:*")} == players_before
    assert all(client.hget(keys.round_record("cup", r), "status") == b"rated" for r in ids)


def test_no_retention_by_default(redis_url: str) -> None:
    rounds = [dict(r, ladder="cup") for r in harness.synthetic_rounds(seed=9, count=10, ladders=("cup",), pool=12)]
    stream(redis_url, rounds)

    async def body() -> None:
        ctx = context(redis_url)
        assert retention.policies(ctx.settings) == []
        await sweep(ctx)
        await ctx.store.close()

    asyncio.run(body())
    client = redis.Redis.from_url(redis_url)
    assert kept(client, "cup", [r["round_id"] for r in rounds]) == ([r["round_id"] for r in rounds],) * 2


def test_history_age_limit(redis_url: str) -> None:
    rounds = [dict(r, ladder="cup") for r in harness.synthetic_rounds(seed=10, count=40, ladders=("cup",), pool=12)]
    stream(redis_url, rounds)
    client = redis.Redis.from_url(redis_url)
    now = harness.BASE_TIME + 40 * DAY / 4
    cutoff = now - 5 * DAY

    async def body() -> None:
        ctx = context(redis_url, retain_history_days=5.0, retain_round_results=3)
        assert (await retention.trim(ctx.store, retention.policies(ctx.settings), now=now)) == {
            "history": 20, "results": 37}
        await ctx.store.close()

    asyncio.run(body())
    for r in {s["player"] for r in rounds for s in r["standings"]}:
        entries = [json.loads(e) for e in client.lrange(keys.history("cup", r), 0, -1)]
        expected = [x["round_id"] for x in rounds if r in {s["player"] for s in x["standings"]}
                    and x["occurred_at"] >= cutoff]
        assert [e["round_id"] for e in entries] == expected, r
