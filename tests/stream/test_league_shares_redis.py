"""League shares on a real ladder: players rated through the stream's handlers into a real Redis,
then ``pipeline.seasons.recompute_shares`` cuts the thresholds from the live leaderboard: each
league holds its target share of the players to within one per boundary (the top league exactly
the best ``top``), every player's league under the thresholds agrees with the stored counts, and
the threshold sets are kept with the time they took effect; with the display's active_days only
the active players count."""

from __future__ import annotations

import asyncio
import json
import random

import numpy as np

from stream.contracts import RoundResult, Standing
from stream.pipeline.messages import Incoming
from stream.pipeline.phase_one import handle_rounds
from stream.pipeline.seasons import recompute_shares, share_leagues
from stream.store import seasons as store_seasons
from test_ladders_handlers import context
from test_phase_one_batch import apply

SHARES = [0.08, 0.20, 0.24, 0.24, 0.20, 0.04]
LADDERS = json.dumps({"ranked": {"model": "mmr-bounded", "seasons": {"shares": SHARES, "top": 12}}})
PLAYERS = 300


def rounds(count: int, seed: int) -> list[RoundResult]:
    rng = random.Random(seed)
    skill = {f"p{i:03d}": rng.gauss(0, 1) for i in range(PLAYERS)}
    out = []
    for k in range(count):
        players = sorted(rng.sample(list(skill), 4), key=lambda p: -(skill[p] + rng.gauss(0, 0.7)))
        out.append(RoundResult(round_id=f"r{k}", ladder="ranked", occurred_at=1.7e9 + 600.0 * k,
                               standings=[Standing(p, rank) for rank, p in enumerate(players, start=1)]))
    return out


def test_leagues_hold_their_target_shares_on_a_real_ladder(redis_url: str) -> None:
    played = rounds(600, seed=4)

    async def body() -> None:
        ctx = context(redis_url, LADDERS)
        for lo in range(0, len(played), 64):
            await apply(ctx, await handle_rounds(ctx, [Incoming(r.to_json().encode()) for r in played[lo:lo + 64]]))
        r = ctx.store.client
        first = await recompute_shares(r, "ranked", ctx.ladder("ranked"), ctx.display("ranked"), now=1000.0)
        n = first["players"]
        assert n == PLAYERS
        counts = np.array(first["counts"])
        assert counts.sum() == n and counts[-1] == 12  # Grandmaster: the top 12
        below = np.cumsum(counts)[:len(SHARES) - 1]
        target = np.minimum(n * np.cumsum(SHARES)[:-1], n - 12)
        assert np.all(np.abs(below - target) <= 1.0), (counts.tolist(), target)
        # every player's league by his stored display rating, under the stored thresholds
        board = await store_seasons.leaderboard_rows(r, "ranked", 0, n)
        names = share_leagues(np.array([score for _, score in board]), first)
        assert [names.count(league) for league in first["leagues"]] == counts.tolist()
        # more rounds move the distribution; a recompute later is kept beside the first
        more = rounds(300, seed=5)
        for k, round_ in enumerate(more):
            round_.round_id = f"later{k}"
            round_.occurred_at += 600.0 * 600
        for lo in range(0, len(more), 64):
            await apply(ctx, await handle_rounds(ctx, [Incoming(x.to_json().encode()) for x in more[lo:lo + 64]]))
        second = await recompute_shares(r, "ranked", ctx.ladder("ranked"), ctx.display("ranked"), now=2000.0)
        assert second["thresholds"] != first["thresholds"]
        assert (await store_seasons.shares_at(r, "ranked", 1500.0))["thresholds"] == first["thresholds"]
        assert (await store_seasons.shares_at(r, "ranked"))["thresholds"] == second["thresholds"]
        assert await store_seasons.shares_at(r, "ranked", 999.0) is None
        assert [doc["at"] for doc in await store_seasons.shares_history(r, "ranked")] == [1000.0, 2000.0]

    asyncio.run(body())


def test_shares_of_the_active_players(redis_url: str) -> None:
    """With the display's active_days, only players with a round within it count."""
    ladders = json.dumps({"ranked": {"model": "mmr-bounded", "seasons": {"shares": [0.5, 0.3, 0.2]}, "display": {
        "active_days": 1.0, "tiers": [["Low", None], ["Mid", 1300.0], ["High", 1500.0]]}}})
    played = rounds(400, seed=6)

    async def body() -> None:
        ctx = context(redis_url, ladders)
        cfg = ctx.ladder("ranked")
        for lo in range(0, len(played), 64):
            await apply(ctx, await handle_rounds(ctx, [Incoming(r.to_json().encode()) for r in played[lo:lo + 64]]))
        r = ctx.store.client
        now = played[-1].occurred_at + 1.0
        doc = await recompute_shares(r, "ranked", cfg, cfg.display, now=now)
        since = now - 86_400.0
        active = {p for x in played if x.occurred_at >= since for p in x.players()}
        assert 0 < doc["players"] == len(active) < PLAYERS
        below = np.cumsum(doc["counts"])[:2]
        assert np.all(np.abs(below - len(active) * np.cumsum([0.5, 0.3])) <= 1.0), doc

    asyncio.run(body())
