"""A season started in Redis behind a worker's back (``stream season start`` while the worker's
schedule of record is older than SEASON_REFRESH_S allows it to notice) does not rate a round of the
new season with the old schedule: register_round.lua refuses (``stale_schedule``) a round at or
after a start the worker has not read (it passes the schedule version it holds; schedule_season.lua
records each start with its version on the ladder hash), and phase one reads the schedule again
and registers it again. Both phase one paths, on a real Redis; Redis then equals the replay with
the new season."""

from __future__ import annotations

import asyncio
import copy
import json

from stream.batch.models import replay_ladders
from stream.engine.ladders import parse_ladders
from stream.engine.season_schedule import iso_time
from stream.pipeline.messages import Incoming
from stream.pipeline.phase_one import BatchResult, handle_one, handle_rounds
from stream.store import seasons as season_store
from stream.store.store import OUTCOME_NEW, OUTCOME_STALE_SCHEDULE
from test_ladders_handlers import TOLERANCE, context, mixed_rounds, stored
from test_phase_one_batch import apply
from tests.store_calls import register_round

T0 = 1.7e9  # mixed_rounds: round k at T0 + 30,000 k seconds
LIVE = T0 + 30_000.0 * 20.5
"""The start of S2, added in Redis while the worker runs (between rounds 20 and 21)."""
FULL = {"a": {"model": "mmr", "seasons": {
    "schedule": [{"name": "S1", "start": iso_time(T0 + 30_000.0 * 8.5)}, {"name": "S2", "start": iso_time(LIVE)}],
    "sigma_to": 260.0, "sigma_share": 0.7, "mu_pull": 0.4, "centre": 1450.0, "placement_rounds": 3}}}
CONFIGURED = copy.deepcopy(FULL)
CONFIGURED["a"]["seasons"]["schedule"] = CONFIGURED["a"]["seasons"]["schedule"][:1]  # S1 only: S2 is started live


def _assert_equals_full_replay(rounds: list, got: dict) -> None:
    """Redis equals the replay of the rounds with S2 (and differs from the replay without it)."""
    with_s2 = {(ladder, p): (mu, sigma, n) for ladder, p, mu, sigma, n in replay_ladders(rounds, parse_ladders(json.dumps(FULL))).ratings()}
    without = {(ladder, p): mu for ladder, p, mu, _, _ in replay_ladders(rounds, parse_ladders(json.dumps(CONFIGURED))).ratings()}
    assert max(abs(with_s2[k][0] - without[k]) for k in with_s2) > 1.0  # S2's reset moves the ratings
    assert set(got) == set(with_s2)
    for key, (mu, sigma, n, _) in got.items():
        want = with_s2[key]
        assert abs(mu - want[0]) <= TOLERANCE and abs(sigma - want[1]) <= TOLERANCE and n == want[2], (key, mu, want)


def _stale_worker(redis_url: str):  # type: ignore[no-untyped-def]
    """A worker context that read the schedule once and would not read it again for an hour."""
    return context(redis_url, json.dumps(CONFIGURED), season_refresh_s=3600.0)


async def _start_s2(ctx) -> None:  # type: ignore[no-untyped-def]
    assert await season_store.schedule_season(ctx.store.client, "a", "S2", LIVE) == (season_store.SCHEDULED, "")


def test_one_by_one_a_stale_worker_rates_the_new_season_with_it(redis_url: str) -> None:
    rounds = mixed_rounds(seed=41, count=32, ladders=("a",))

    async def body() -> None:
        ctx = _stale_worker(redis_url)
        for k, round_ in enumerate(rounds):
            if k == 21:  # round 20 rated: S2 (at 20.5) may start; the worker holds the old schedule
                await _start_s2(ctx)
            result = await handle_one(ctx, Incoming(round_.to_json().encode()))
            assert result.outcome == "rated"
            await apply(ctx, BatchResult([result], result.updates))
        _assert_equals_full_replay(rounds, await stored(ctx, rounds))

    asyncio.run(body())


def test_in_batches_a_stale_worker_rates_the_new_season_with_it(redis_url: str) -> None:
    rounds = mixed_rounds(seed=42, count=32, ladders=("a",))

    async def body() -> None:
        ctx = _stale_worker(redis_url)
        deferred: list[int] = []
        for lo in range(0, len(rounds), 6):  # the batch of rounds 18..23 crosses S2's start
            if lo == 18:
                first = await handle_rounds(ctx, [Incoming(r.to_json().encode()) for r in rounds[lo:lo + 3]])
                await apply(ctx, first)
                await _start_s2(ctx)  # after round 20: the batch's rounds 21 and 22 are in S2
                batch = await handle_rounds(ctx, [Incoming(r.to_json().encode()) for r in rounds[lo + 3:lo + 6]])
            else:
                batch = await handle_rounds(ctx, [Incoming(r.to_json().encode()) for r in rounds[lo:lo + 6]])
            assert all(result is not None and result.outcome == "rated"
                       for i, result in enumerate(batch.results) if i not in batch.deferred)
            await apply(ctx, batch)
            deferred.extend(batch.deferred)
            for i in batch.deferred:  # handled one by one after the batch's phase two, as the agent does
                result = await handle_one(ctx, Incoming(rounds[lo + (3 if lo == 18 else 0) + i].to_json().encode()))
                assert result.outcome == "rated"
                await apply(ctx, BatchResult([result], result.updates))
        assert deferred  # the batch after S2's start was refused (stale_schedule) and registered again
        _assert_equals_full_replay(rounds, await stored(ctx, rounds))

    asyncio.run(body())


def test_the_script_refuses_only_rounds_at_or_after_an_unread_start(redis_url: str) -> None:
    async def body() -> None:
        ctx = _stale_worker(redis_url)
        store = ctx.store
        assert await season_store.schedule_season(store.client, "a", "S2", LIVE) == (season_store.SCHEDULED, "")

        async def register(round_id: str, at: float, version: int) -> str:
            reg = await register_round(store, "a", round_id, content_hash=round_id, occurred_at=at, received_at=at,
                                             field_size=2, schedule_version=version)
            return reg.outcome

        assert await register("before", LIVE - 1.0, 0) == OUTCOME_NEW  # before every start it lacks
        assert await register("at", LIVE, 0) == OUTCOME_STALE_SCHEDULE
        assert await store.round_record("a", "at") == {}  # nothing registered
        assert await register("at", LIVE, 1) == OUTCOME_NEW  # with the schedule read again

    asyncio.run(body())
