"""The sweeper ladder by ladder (stream/pipeline/sweeper.py), against the session's private redis-server:
a ladder stuck at its barrier does not stop the sweep of the others, and a big round whose
updates are being applied is not re-sent whole."""

from __future__ import annotations

import asyncio
import time

from stream.contracts import PlayerUpdate, RoundResult, Standing
from stream.pipeline.context import PipelineContext
from stream.pipeline.messages import FanOutMessage
from stream.pipeline.outbox import ListOutbox
from stream.pipeline.sweeper import sweep
from stream.settings import Settings
from tests.store_calls import PlayerWrite, RoundWrites, apply, mark_queued, register_round, save_fanout


def context(redis_url: str) -> tuple[PipelineContext, list[FanOutMessage]]:
    """A context and the list of what it re-sends."""
    outbox = ListOutbox(4)
    ctx = PipelineContext.from_settings(Settings(redis_url=redis_url, partitions=4, sweep_timeout_s=1.0,
                                                 barrier_poll_s=0.001, barrier_max_poll_s=0.01, barrier_warn_s=60.0),
                                        outbox=outbox)
    return ctx, outbox.resent


def update(ladder: str, round_id: str, players: list[str]) -> bytes:
    return PlayerUpdate(ladder, round_id, 1, 1.7e9, 1.0, len(players), players, list(range(1, len(players) + 1)),
                        [1500.0] * len(players)).to_json().encode()


def round_(ladder: str, round_id: str, players: list[str]) -> RoundResult:
    return RoundResult(round_id=round_id, ladder=ladder, occurred_at=1.7e9,
                       standings=[Standing(p, i + 1) for i, p in enumerate(players)])


async def register(ctx: PipelineContext, r: RoundResult, *, due_at: float) -> int:
    registration = await register_round(ctx.store, 
        r.ladder, r.round_id, content_hash=r.content_hash(), occurred_at=r.occurred_at, received_at=0.0,
        field_size=r.field_size, body=r.to_json().encode(), due_at=due_at)
    return registration.seq


def test_a_ladder_stuck_at_its_barrier_does_not_stop_the_sweep_of_the_others(redis_url: str) -> None:
    async def body() -> tuple[float, list[tuple[str, str]], list[FanOutMessage]]:
        ctx, sent = context(redis_url)
        past = time.time() - 10.0
        earlier = round_("A", "a0", ["x", "z"])  # stored, never applied: a1 waits for it forever
        seq = await register(ctx, earlier, due_at=past)
        await mark_queued(ctx.store, "A", ["x", "z"], seq)
        await save_fanout(ctx.store, "A", "a0", pending=2, messages=[(0, update("A", "a0", ["x", "z"]))])
        stuck = round_("A", "a1", ["x", "y"])
        await register(ctx, stuck, due_at=past)
        ok = round_("B", "b1", ["u", "v"])
        await register(ctx, ok, due_at=past)
        await save_fanout(ctx.store, "B", "b1", pending=2, messages=[(1, update("B", "b1", ["u", "v"]))], due_at=past)
        started = time.monotonic()
        report = await asyncio.wait_for(sweep(ctx), timeout=20.0)
        await ctx.store.close()
        return time.monotonic() - started, report.resent, sent

    took, resent, sent = asyncio.run(body())
    assert resent == [("B", "b1")] and [m.value for m in sent] == [update("B", "b1", ["u", "v"])]
    assert took < 10.0, "the stuck ladder is given up after SWEEP_TIMEOUT_S"


def test_a_round_being_applied_is_not_re_sent_whole(redis_url: str) -> None:
    players = [f"p{i}" for i in range(10)]

    def writes(chosen: list[str]) -> RoundWrites:
        return RoundWrites("L", "r1", [PlayerWrite(p, 1, 1500.0, 80.0, 1, "r1", 1.7e9, 1400.0, "", b"s",
                                                   f'{{"p":"{p}"}}'.encode(), True) for p in chosen])

    async def body() -> list[list[tuple[str, str]]]:
        ctx, _ = context(redis_url)
        await register(ctx, round_("L", "r1", players), due_at=0.0)
        await save_fanout(ctx.store, "L", "r1", pending=10, messages=[(0, update("L", "r1", players[:5])),
                                                                         (1, update("L", "r1", players[5:]))], due_at=0.0)
        seen = []
        await apply(ctx.store, [writes(players[:3])], now=1.0)  # progress since it was stored
        seen.append((await sweep(ctx)).resent)
        await ctx.store.client.hset("ems:round:{L}:r1", "redrives", 0)  # due again at once
        await ctx.store.client.zadd("ems:incomplete:{L}", {"r1": 0})
        await apply(ctx.store, [writes(players[3:5])], now=2.0)  # more progress
        seen.append((await sweep(ctx)).resent)
        await ctx.store.client.zadd("ems:incomplete:{L}", {"r1": 0})
        seen.append((await sweep(ctx)).resent)  # no progress since the last claim: stuck, re-sent
        await ctx.store.close()
        return seen

    assert asyncio.run(body()) == [[], [], [("L", "r1")]]
