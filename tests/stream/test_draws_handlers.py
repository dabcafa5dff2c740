"""Draws (every entry of a round tied) through the pipeline's handlers (no Kafka, the session's
private redis-server): each ladder's model decides (``draws_rate``): preset ``mmr`` records a
draw ``no_outcome`` (the authors' skip), every other model rates it. Batches of any size,
corrections (a round amended into a draw, a draw voided or amended) and backfill leave Redis equal
to ``replay_ladders`` of the same rounds, which rates them one by one."""

from __future__ import annotations

import asyncio
import json
import random

import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stream.contracts import Limits, parse_round
from stream.pipeline.backfill import backfill
from stream.pipeline.messages import Incoming
from stream.pipeline.phase_one import handle_rounds
from stream.store import keys
from tests.stream import pipeline_harness as harness
from tests.stream.test_backfill import stream_rounds
from tests.stream.test_corrections import History, assert_same_ladders, context, correct, other_db
from tests.stream.test_corrections_models import assert_equals_replay
from tests.stream.test_phase_one_batch import apply
from tests.store_calls import stored_player

LADDERS = json.dumps({"m": {"model": "mmr"}, "b": {"model": "mmr-bounded"}, "x": {"model": "mmx"},
                      "g": {"model": "glicko"}, "t": {"model": "trueskill"}, "k": {"model": "topcoder"},
                      "*": {"model": "mmr-bounded"}})
NAMES = tuple("mbxgtk")


def with_draws(rounds: list[dict], share: float, seed: int) -> list[dict]:
    """``rounds`` with about ``share`` of them turned into draws (every player at rank 1)."""
    rng = random.Random(seed)
    for r in rounds:
        if rng.random() < share:
            r["standings"] = [dict(s, rank=1) for s in r["standings"]]
    return rounds


def is_draw(r: dict) -> bool:
    return len({s["rank"] for s in r["standings"]}) == 1


@settings(max_examples=10, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), size=st.sampled_from([1, 4, 16]), share=st.sampled_from([0.2, 0.6]))
def test_batches_with_draws_equal_the_replay(redis_url: str, seed: int, size: int, share: float) -> None:
    """Phase one's batches (a later round from the posteriors the earlier ones left) equal rating
    the rounds one by one: draws rated on every ladder but ``m``, recorded ``no_outcome`` there."""
    redis.Redis.from_url(redis_url).flushdb()
    rounds = with_draws(harness.synthetic_rounds(seed=seed, count=36, ladders=NAMES, pool=10, max_size=5), share, seed)
    assert any(is_draw(r) for r in rounds)

    async def body() -> None:
        ctx = context(redis_url, ladders=LADDERS)
        for lo in range(0, len(rounds), size):
            part = rounds[lo:lo + size]
            batch = await handle_rounds(ctx, [Incoming(json.dumps(r).encode()) for r in part])
            want = ["no_outcome" if r["ladder"] == "m" and is_draw(r) else "rated" for r in part]
            assert [res.outcome for res in batch.results if res is not None] == want
            await apply(ctx, batch)
        await ctx.store.close()

    asyncio.run(body())
    assert_equals_replay(redis_url, rounds, context(redis_url, ladders=LADDERS))
    client = redis.Redis.from_url(redis_url)
    for r in rounds:
        status = client.hget(keys.round_record(r["ladder"], r["round_id"]), "status")
        assert status == (b"no_outcome" if r["ladder"] == "m" and is_draw(r) else b"rated"), r
    client.close()


def test_a_drawn_trueskill_team_round_moves_all_six(redis_url: str) -> None:
    """The issue's reproduction, through the handlers: the second round, two teams tied at rank 1,
    moves all six players (``rounds`` 2 each), means toward each other, sigmas down."""
    first = {"round_id": "m1", "ladder": "t", "occurred_at": 1.7e9,
             "standings": [{"team": "a", "players": ["p1", "p2", "p3"], "rank": 1},
                           {"team": "b", "players": ["p4", "p5", "p6"], "rank": 2}]}
    drawn = {"round_id": "m2", "ladder": "t", "occurred_at": 1.7e9 + 60,
             "standings": [{"team": "a", "players": ["p1", "p4", "p5"], "rank": 1},
                           {"team": "b", "players": ["p2", "p3", "p6"], "rank": 1}]}
    redis.Redis.from_url(redis_url).flushdb()

    async def body() -> dict[str, tuple[float, float]]:
        ctx = context(redis_url, ladders=LADDERS)
        await stream_rounds(ctx, [first])
        before = {}
        for p in ("p1", "p2", "p3", "p4", "p5", "p6"):
            row = await stored_player(ctx.store, "t", p)
            before[p] = (float(row["mu"]), float(row["sigma"]))
        await stream_rounds(ctx, [drawn])
        await ctx.store.close()
        return before  # type: ignore[return-value]

    before = asyncio.run(body())
    client = redis.Redis.from_url(redis_url)
    after = {p: client.hgetall(keys.player("t", p)) for p in before}
    assert all(int(row[b"rounds"]) == 2 for row in after.values())
    assert all(float(after[p][b"sigma"]) < before[p][1] for p in before)
    team_a = sum(before[p][0] for p in ("p1", "p4", "p5"))
    team_b = sum(before[p][0] for p in ("p2", "p3", "p6"))
    assert team_a < team_b  # p1 won the first round, p4 and p5 lost it: team a is the weaker
    assert all(float(after[p][b"mu"]) > before[p][0] for p in ("p1", "p4", "p5"))  # drew the stronger: up
    assert all(float(after[p][b"mu"]) < before[p][0] for p in ("p2", "p3", "p6"))
    assert client.hget(keys.round_record("t", "m2"), "status") == b"rated"
    client.close()
    assert_equals_replay(redis_url, [first, drawn], context(redis_url, ladders=LADDERS))


def test_corrections_into_and_out_of_draws_equal_the_corrected_stream(redis_url: str) -> None:
    """A round amended into a draw, a draw amended into a win, a draw voided, on an Elo-MMR
    ladder that rates draws, on glicko, and on ``m`` (the amended draw is recorded ``no_outcome``):
    Redis equals a fresh stream of the corrected history and its replay."""
    history = History()
    history.rounds = with_draws(harness.synthetic_rounds(seed=29, count=50, ladders=("b", "g", "m"), pool=10,
                                                         max_size=5), 0.25, 29)
    redis.Redis.from_url(redis_url).flushdb()
    results = []

    async def body() -> None:
        ctx = context(redis_url, ladders=LADDERS)
        await stream_rounds(ctx, history.rounds[:40])
        for ladder in ("b", "g", "m"):
            mine = [r for r in history.rounds[:40] if r["ladder"] == ladder]
            decided = next(r for r in mine[1:] if not is_draw(r))
            tied = [dict(s, rank=1) for s in decided["standings"]]
            results.append(await correct(ctx, history.amend(ladder, decided["round_id"], tied)))
            drawn = [r for r in mine if is_draw(r) and r is not decided]
            if drawn:
                results.append(await correct(ctx, history.void(ladder, drawn[0]["round_id"])))
            if len(drawn) > 1:
                won = [dict(s, rank=i + 1) for i, s in enumerate(drawn[1]["standings"])]
                results.append(await correct(ctx, history.amend(ladder, drawn[1]["round_id"], won)))
        await stream_rounds(ctx, history.rounds[40:])
        await ctx.store.close()

    asyncio.run(body())
    assert len(results) >= 6 and all(r.outcome in ("applied", "no-op") for r in results), \
        [(r.outcome, r.dead_letter) for r in results]
    fresh = other_db(redis_url, 1)
    redis.Redis.from_url(fresh).flushdb()

    async def again() -> None:
        ctx = context(fresh, ladders=LADDERS)
        await stream_rounds(ctx, history.corrected())
        await ctx.store.close()

    asyncio.run(again())
    assert_same_ladders(redis_url, fresh, ("b", "g", "m"))
    assert_equals_replay(redis_url, history.corrected(), context(redis_url, ladders=LADDERS))
    client = redis.Redis.from_url(redis_url)
    amended_m = results[[r.ladder for r in results].index("m")].entry["round_id"]  # type: ignore[index]
    assert client.hget(keys.round_record("m", amended_m), "status") == b"no_outcome"
    client.close()


def test_backfill_with_draws_equals_the_stream(redis_url: str) -> None:
    """``stream backfill`` rates and records draws as the stream does (every ladder's model)."""
    rounds = with_draws(harness.synthetic_rounds(seed=31, count=60, ladders=NAMES, pool=10, max_size=5), 0.3, 31)
    streamed, filled = redis_url, other_db(redis_url, 2)
    for url in (streamed, filled):
        redis.Redis.from_url(url).flushdb()

    async def body() -> None:
        a, b = context(streamed, ladders=LADDERS), context(filled, ladders=LADDERS)
        await stream_rounds(a, rounds)
        summary = await backfill(b, [parse_round(json.dumps(r), limits=Limits()) for r in rounds])
        skipped = sum(r["ladder"] == "m" and is_draw(r) for r in rounds)
        assert skipped and summary.no_outcome == skipped and summary.rated == len(rounds) - skipped
        await a.store.close()
        await b.store.close()

    asyncio.run(body())
    assert_same_ladders(streamed, filled, NAMES)
    assert_equals_replay(filled, rounds, context(filled, ladders=LADDERS))
