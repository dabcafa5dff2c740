"""Seasons in phase one on a real Redis: round by round (``handle_one``: a batch of one, as the
fallback and the sweeper rate) and in batches (``handle_rounds``); both (the engine's
``rate_rounds``, reset by ``engine.seasons.reset_rows``), with phase two, equal the replay of the
same rounds, in which the players crossing a season start were soft-reset."""

from __future__ import annotations

import asyncio
import json

import numpy as np

from stream.batch.models import replay_ladders
from stream.engine.ladders import parse_ladders
from stream.engine.season_schedule import entering, iso_time
from tests.engine.oracles import state_from_bytes
from stream.pipeline import whatif
from stream.pipeline.messages import Incoming
from stream.pipeline.phase_one import BatchResult, handle_one, handle_rounds
from stream.engine.display import tier_names
from stream.pipeline.rerate import HistoryRound, rerate
from test_ladders_handlers import assert_equals_replay, context, mixed_rounds, stored
from test_phase_one_batch import apply
from tests.store_calls import stored_player

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
            result = await handle_one(ctx, Incoming(round_.to_json().encode()))
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
            got = (await stored_player(ctx.store, ladder, player))["tier"]
            got = got.decode() if isinstance(got, bytes) else got
            assert got == names[row], (ladder, player, got, names[row])
        # the history had placement rounds (newcomers' and returning players')
        assert any(t < -1 for t in redone.tier.tolist())


def test_what_if_with_seasons_equals_what_the_stream_then_stores(redis_url: str) -> None:
    """Before each round of a seasoned history, the what-if of that round (``pipeline.whatif``:
    read the live states, rate, write nothing) gives every player the mu, sigma and tier the
    stream then stores: a returning player's soft reset (phase one's performance from the reset
    belief) and his placement included."""
    rounds = mixed_rounds(seed=34, count=45, ladders=("a", "d"))
    rounds = [r for r in rounds if not r.has_teams() and not r.is_partial()]
    assert _moved(rounds) > 1.0

    async def body() -> None:
        ctx = context(redis_url, LADDERS)
        crossed = 0
        for round_ in rounds:
            cfg = ctx.ladder(round_.ladder)
            stored_ = await whatif.load(ctx.store.client, round_.ladder, round_.players())
            rows = whatif.rate(cfg, round_, stored_)
            crossed += int(entering(np.array([0.0 if s is None else state_from_bytes(s).last_time
                                              for s in stored_.states]),
                                    np.full(len(round_.players()), round_.occurred_at), cfg.seasons).sum())
            result = await handle_one(ctx, Incoming(round_.to_json().encode()))
            await apply(ctx, BatchResult([result], result.updates))
            for k, player in enumerate(rows.players):
                row = await stored_player(ctx.store, round_.ladder, player)
                tier = row["tier"].decode() if isinstance(row["tier"], bytes) else row["tier"]
                assert abs(float(row["mu"]) - rows.mu_after[k]) <= 1e-9, (round_.round_id, player)
                assert abs(float(row["sigma"]) - rows.sigma_after[k]) <= 1e-9, (round_.round_id, player)
                assert tier == rows.tier_after[k], (round_.round_id, player, tier, rows.tier_after[k])
        assert crossed > 0  # some rounds started a season for a returning player

    asyncio.run(body())
