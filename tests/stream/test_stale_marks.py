"""Marks an attempt left behind never stall a ladder (issue 26: the barrier on Redis Cluster).

Phase one marks a batch's rounds for their players before any is applied, and on Redis Cluster
(or a round above ``players_per_call`` players on a single Redis) before their fan-outs are
stored. A batch fenced in its store (another worker took the ladder's lease) or killed between
the two round trips leaves a player marked for rounds r2 and r3 though neither is stored. The
next attempt at r2 must wait for the player's previous round only (r1), not for r3: r3 cannot be
stored while r2 is registered (save_fanout.lua). It used to wait for r3, forever.

* the barrier, against a model: after any sequence of marks and applications, the round each
  attempt waits for is the newest mark below it not yet applied (hypothesis, real Redis);
* a fenced batch's leftovers on a single Redis (every round marked on its own) and on a real
  Redis Cluster: the next attempt, a batch or the sweeper, rates r2 then r3, and Redis equals
  the replay.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from stream.pipeline import faults
from stream.pipeline.context import PipelineContext
from stream.pipeline.phase_one import handle_rounds
from stream.store import keys, player_hash
from stream.store.store import Store

from test_phase_one_batch import assert_equals_replay, complete_as_sweeper, context, game, incoming, players_of, stored_states
from test_phase_one_races import phase_two, url_and_cluster  # noqa: F401 - the fixture
from test_phase_one_races import worker as races_worker

Step = tuple[str, int]
"""("mark", seq): phase one marks the player for round seq before its fan-out is stored (Redis
Cluster, a big round); ("stored", seq): after it is stored (queue_rounds.lua); ("apply", seq):
phase two applied the player's rounds up to seq (his last_seq moves up to it)."""

steps = st.lists(st.tuples(st.sampled_from(["mark", "mark", "stored", "apply"]), st.integers(1, 9)), max_size=14)


def expected_wait(steps_: list[Step], seq: int) -> int:
    """The model: the newest round below ``seq`` marked for the player, not applied, and not below
    a round marked stored (no attempt rates such a round again), 0: none."""
    marks: set[int] = set()
    last = 0
    for kind, value in steps_:
        if kind == "apply":
            last = max(last, value)
        else:
            marks = {m for m in marks if m > value} if kind == "stored" else marks
            marks.add(value)
    return max((m for m in marks if last < m < seq), default=0)


async def mark(store: Store, seq: int, stored: bool) -> None:
    """mark_queued.lua on player p, as Store.mark_queued (Cluster, big rounds) or as queue_rounds.lua
    calls it once the round is stored."""
    args = [seq, "stored"] if stored else [seq]
    await store._run(lambda pipe: store._eval(pipe, "mark_queued", [keys.player("L", "p")], args))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps_=steps)
def test_the_barrier_waits_for_the_newest_mark_below_the_round(redis_url: str, steps_: list[Step]) -> None:
    async def body() -> tuple[list[tuple[int, bool]], int]:
        store = Store.from_url(redis_url, history_length=8)
        player = keys.player("L", "p")
        await store.client.delete(player)
        for kind, value in steps_:
            if kind == "apply":
                last = int(await store.client.hget(player, player_hash.LAST_SEQ) or 0)
                await store.client.hset(player, player_hash.LAST_SEQ, max(last, value))
            else:
                await mark(store, value, stored=kind == "stored")
        got = []
        for seq in range(1, 11):
            priors = await store.load_priors("L", ["p"], seq)
            assert priors.waits_for is not None
            got.append((int(priors.waits_for[0]), bool(priors.blocked)))
        queued = int(await store.client.hget(player, player_hash.QUEUED_SEQ) or 0)
        await store.close()
        return got, queued

    got, queued = asyncio.run(body())
    for seq, (waits_for, held) in zip(range(1, 11), got):
        want = expected_wait(steps_, seq)
        assert held == (want > 0), (seq, got)
        if held:
            assert waits_for == want, (seq, got)
    assert queued == max((v for k, v in steps_ if k != "apply"), default=0), "queued_seq is the newest mark"


@pytest.fixture(autouse=True)
def no_fault_hook() -> Any:
    yield
    faults.install(None)


def worker(url_and_cluster: tuple[str, bool]) -> PipelineContext:
    """One worker whose re-sends go through phase two; on a single Redis every round is marked on
    its own, before its fan-out, as on Redis Cluster (``players_per_call`` 1)."""
    ctx = races_worker(url_and_cluster)
    ctx.store.players_per_call = 1
    return ctx


@pytest.mark.parametrize("successor", ["batch", "sweeper"])
def test_a_fenced_batch_s_marks_do_not_stall_the_next_attempt(url_and_cluster: tuple[str, bool], successor: str) -> None:
    """r1 is stored and applied. A batch rates [r2, r3] (a plays both) and, before its store,
    another worker takes the ladder's lease: the batch is fenced, and leaves a marked for r2 and
    r3 (marks first). The next attempt rates r2 (a batch of [r2], or the sweeper completing it),
    then r3: a waits for r1 only. Redis equals the replay."""
    rounds = [game("r1", "L", ["a", "b"], 0), game("r2", "L", ["a", "c"], 1), game("r3", "L", ["d", "a"], 2)]

    async def body() -> tuple[dict[tuple[str, str], tuple[float, float]], list[str | None], list[bytes | None]]:
        zombie, owner = worker(url_and_cluster), worker(url_and_cluster)
        first = await handle_rounds(owner, incoming(rounds[:1]))
        await phase_two(owner, [m.value for m in first.messages])

        async def hook(place: str, **context: Any) -> bool:
            if place == faults.AFTER_PRIORS_BEFORE_FANOUT_STORED:  # the lease changes hands
                await zombie.store.client.delete(keys.lease("L"))
                assert await owner.store.acquire_lease("L", "another worker", 60_000)
                await owner.store.client.delete(keys.lease("L"))  # and lets go at once
            return False

        faults.install(hook)
        fenced = await handle_rounds(zombie, incoming(rounds[1:]))
        faults.install(None)
        marks = await zombie.store.client.hmget(keys.player("L", "a"), ["queued_seq", "queued_prev", "last_seq"])
        if successor == "batch":
            second = await asyncio.wait_for(handle_rounds(owner, incoming(rounds[1:2])), timeout=30.0)
            await phase_two(owner, [m.value for m in second.messages])
        else:
            await phase_two(owner, [m.value for m in await asyncio.wait_for(
                complete_as_sweeper(owner, "L", "r2"), timeout=30.0)])
        third = await asyncio.wait_for(handle_rounds(owner, incoming(rounds[2:])), timeout=30.0)
        await phase_two(owner, [m.value for m in third.messages])
        got = await stored_states(owner, players_of(rounds))
        for ctx in (zombie, owner):
            await ctx.store.close()
        return got, [r.outcome for r in fenced.results if r is not None], marks

    got, outcomes, marks = asyncio.run(body())
    assert outcomes == ["fenced", "fenced"], outcomes
    assert marks == [b"3", b"2", b"1"], f"the fenced batch left a marked for r2 and r3: {marks}"
    assert_equals_replay(rounds, got)
