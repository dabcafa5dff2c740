"""Seasons in phase one's two paths on a real Redis: round by round (``handle_round``: the
fallback, the sweeper and recovery; it reads priors, not states, and resets them with
``engine.seasons.seasoned_view``) and in batches (``handle_rounds``: the engine's ``rate_rounds``,
reset by ``engine.seasons.reset_rows``); both, with phase two, equal the replay of the same
rounds, in which the players crossing a season start were soft-reset."""

from __future__ import annotations

import asyncio
import json

from stream.batch.models import replay_ladders
from stream.engine.ladders import parse_ladders
from stream.engine.season_schedule import iso_time
from stream.pipeline.messages import Incoming
from stream.pipeline.phase_one import BatchResult, handle_round, handle_rounds
from stream.engine.display import tier_names
from stream.pipeline.rerate import HistoryRound, rerate
from test_ladders_handlers import assert_equals_replay, context, mixed_rounds, stored
from test_phase_one_batch import apply

T0 = 1.7e9  # mixed_rounds: round k at T0 + 30,000 k seconds
SEASONS = {"schedule": [{"name": "S1", "start": iso_time(T0 + 30_000.0 * 15.5)},
                        {"name": "S2", "start": iso_time(T0 + 30_000.0 * 30.5)}],
           "sigma_to": 260.0, "sigma_share": 0.7, "mu_pull": 0.4, "centre": 1450.0, "placement_rounds": 3}
LADDERS = json.dumps({"a": {"model": "mmr", "seasons": SEASONS}, "*": {"model": "mmr-bounded", "seasons": SEASONS}})


def _moved(rounds: list) -> float:
    """How far the seasons move the replay's ratings (the test is about something)."""
    with_, without = (dict(((ladder, p), mu) for ladder, p, mu, _, _ in replay_ladders(rounds, parse_ladders(cfg)).ratings())
                      for cfg in (LADDERS, json.dumps({"a": {"model": "mmr"}})))
    return max(abs(with_[k] - without[k]) for k in with_)


def test_round_by_round_with_seasons_equals_replay(redis_url: str) -> None:
    rounds = mixed_rounds(seed=32, count=45, ladders=("a", "d"))
    assert _moved(rounds) > 1.0

    async def body() -> None:
        ctx = context(redis_url, LADDERS)
        for round_ in rounds:
            result = await handle_round(ctx, round_.to_json().encode())
            assert result.outcome == "rated"
            await apply(ctx, BatchResult([result], result.updates))
        assert_equals_replay(ctx, rounds, await stored(ctx, rounds))
        await assert_tiers_equal_rerate(ctx, rounds)

    asyncio.run(body())


def test_batches_with_seasons_equal_replay(redis_url: str) -> None:
    rounds = mixed_rounds(seed=33, count=45, ladders=("a", "d"))

    async def body() -> None:
        ctx = context(redis_url, LADDERS)
        for lo in range(0, len(rounds), 8):
            batch = await handle_rounds(ctx, [Incoming(r.to_json().encode()) for r in rounds[lo:lo + 8]])
            assert all(result is not None and result.outcome == "rated" for result in batch.results)
            await apply(ctx, batch)
        assert_equals_replay(ctx, rounds, await stored(ctx, rounds))
        await assert_tiers_equal_rerate(ctx, rounds)

    asyncio.run(body())


async def assert_tiers_equal_rerate(ctx, rounds: list) -> None:  # type: ignore[no-untyped-def]
    """The stored tiers (placement included) are what a correction's re-rate of the same history
    computes (``rerate``: the whole history in chunks), ladder by ladder."""
    for ladder in sorted({r.ladder for r in rounds}):
        history = [HistoryRound.of(r, k + 1) for k, r in enumerate(r for r in rounds if r.ladder == ladder)]
        cfg = ctx.ladder(ladder)
        redone = rerate(history, cfg.elo_mmr, ctx.display(ladder))
        names = tier_names(redone.final_tier, ctx.display(ladder))
        for player, row in zip(redone.table.names, range(redone.table.size)):
            got = (await ctx.store.player(ladder, player))["tier"]
            got = got.decode() if isinstance(got, bytes) else got
            assert got == names[row], (ladder, player, got, names[row])
        # the history had placement rounds (newcomers' and returning players')
        assert any(t < -1 for t in redone.tier.tolist())
