"""Phase one's cross-batch posterior cache (``stream/pipeline/posteriors.py``) against the
session's private redis-server: with phase two lagging batches behind (its messages applied late,
partitions interleaved at random) Redis still equals replay, phase one never waits for its own
posteriors while the cache holds them, and a hold, a correction or a repair drops the ladder's
entries so a stale posterior is never used."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.contracts import PlayerUpdate, RoundResult
from stream.pipeline import phase_one
from stream.pipeline.context import PipelineContext
from stream.pipeline.corrections import finish_correction, handle_correction
from stream.pipeline.messages import FanOutMessage, Incoming, Origin, split_sections
from stream.pipeline.phase_one import handle_one, handle_rounds
from stream.pipeline.posteriors import PosteriorCache
from stream.pipeline.updates_batches import phase_two_batch, release_update
from stream.store.store import Priors
from tests.stream.test_phase_one_batch import (NAMES, assert_equals_replay, context, game, incoming, players_of,
                                               sections_by_round, stored_states)


STUCK_S = 10.0
"""Seconds a batch may run without waiting at the barrier before phase two is made to catch up anyway."""


class Lagging:
    """Phase two behind phase one: the fan-out of every batch is held back, and applied later
    (every ``lag`` batches, or when phase one is seen waiting), partitions interleaved at random
    (each partition's messages in order, as a Kafka consumer sees them)."""

    def __init__(self, ctx: PipelineContext, rng: random.Random) -> None:
        self.ctx, self.rng = ctx, rng
        self.pending: dict[int, list[FanOutMessage]] = {}
        self.unblocked = 0  # times phase one had to be unblocked by applying phase two

    def hold(self, messages: Sequence[FanOutMessage]) -> None:
        for m in messages:
            self.pending.setdefault(m.partition, []).append(m)

    async def drain(self) -> None:
        queues = [q for q in self.pending.values() if q]
        cursor = [0] * len(queues)
        order = []
        while any(c < len(q) for c, q in zip(cursor, queues)):  # a random interleaving of the partitions
            k = self.rng.choice([i for i, (c, q) in enumerate(zip(cursor, queues)) if c < len(q)])
            order.append(queues[k][cursor[k]])
            cursor[k] += 1
        self.pending.clear()
        while order:
            cut = self.rng.randint(1, len(order))
            chunk, order = order[:cut], order[cut:]

            async def send(records: list, what: str) -> None:  # type: ignore[type-arg]
                pass

            await phase_two_batch(self.ctx, NAMES, [Incoming(m.value, m.key, Origin("player-updates", m.partition, i))
                                                    for i, m in enumerate(chunk)], send)

    async def phase_one(self, rounds: Sequence[RoundResult]) -> phase_one.BatchResult:
        """``handle_rounds`` of the batch; if it waits at the barrier (a player the cache does not
        hold), phase two catches up, as the worker's other agent would. The wait is seen at the
        barrier itself, not guessed from elapsed time (a slow batch on a loaded machine is not a
        wait); a batch that neither ends nor waits within ``STUCK_S`` is unblocked all the same,
        and counted, so a wait the barrier did not announce fails the tests that expect none."""
        waiting = asyncio.Event()
        inner = phase_one.wait_for_priors

        async def announcing(*args, **kwargs):  # type: ignore[no-untyped-def]
            first = kwargs.get("first")
            if first is None or first.blocked:
                waiting.set()
            return await inner(*args, **kwargs)

        phase_one.wait_for_priors = announcing  # type: ignore[assignment]
        try:
            task = asyncio.ensure_future(handle_rounds(self.ctx, incoming(rounds)))
            started = time.monotonic()
            while True:
                done, _ = await asyncio.wait({task}, timeout=0.05)
                if done:
                    batch = task.result()
                    self.hold(batch.messages)
                    return batch
                stuck = time.monotonic() - started > STUCK_S
                if (waiting.is_set() or stuck) and any(self.pending.values()):
                    self.unblocked += 1
                    await self.drain()
        finally:
            phase_one.wait_for_priors = inner  # type: ignore[assignment]


def barrier_spy(monkeypatch_target: list[int]):  # type: ignore[no-untyped-def]
    """``phase_one.wait_for_priors`` recording how many players each call starts out holding."""
    original = phase_one.wait_for_priors

    async def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        first = kwargs.get("first")
        monkeypatch_target.append(len(first.blocked) if first is not None else -1)
        return await original(*args, **kwargs)

    return original, spy


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 10), st.lists(st.integers(1, 12), min_size=2, max_size=8),
       st.integers(1, 4), st.sampled_from([0, 8, 10_000]))
def test_lagging_phase_two_equals_replay(redis_server, seed: int, pool: int, cuts: list[int],  # type: ignore[no-untyped-def]
                                         lag: int, capacity: int) -> None:
    """Property: phase one over consecutive batches with the cache, phase two applied only every
    ``lag`` batches in a random interleaving of partitions: Redis ends as replay (one by one).
    With room for every player, phase one never waits at the barrier (the cache holds every
    posterior still in flight); with none (``capacity`` 0) it waits as before."""
    import redis

    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    client.close()
    rng = random.Random(seed)
    names = [f"p{i}" for i in range(pool)]
    rounds = [game(f"h{k}", rng.choice("AB"), rng.sample(names, rng.randint(2, min(4, pool))), day=k * rng.random())
              for k in range(sum(cuts))]
    held: list[int] = []
    original, spy = barrier_spy(held)

    async def body() -> tuple[dict[tuple[str, str], tuple[float, float]], Lagging]:
        ctx = context(redis_server.url, phase_one_cache_players=capacity)
        lagging = Lagging(ctx, rng)
        start = 0
        for n, size in enumerate(cuts):
            batch = await lagging.phase_one(rounds[start:start + size])
            assert [r.outcome for r in batch.results if r] == ["rated"] * size
            start += size
            if (n + 1) % lag == 0:
                await lagging.drain()
        await lagging.drain()
        got = await stored_states(ctx, players_of(rounds))
        await ctx.store.close()
        return got, lagging

    phase_one.wait_for_priors = spy  # type: ignore[assignment]
    try:
        got, lagging = asyncio.run(body())
    finally:
        phase_one.wait_for_priors = original  # type: ignore[assignment]
    assert_equals_replay(rounds, got)
    if capacity >= pool * 2:
        assert lagging.unblocked == 0 and not any(held), "phase one waited for a posterior it had computed"


def test_cache_lets_held_players_through_with_the_right_previous_seq(redis_url: str) -> None:
    """Three batches sharing players, phase two not run at all: the second and third are rated
    from cached posteriors (no wait), each entry names its prior's round (``previous_seq``), and
    applying everything afterwards (chain rule) equals replay."""
    rounds = [game("r1", "A", ["a", "b"], 0), game("r2", "A", ["b", "c"], 1),
              game("r3", "A", ["c", "a"], 2), game("r4", "A", ["a", "d"], 3),
              game("r5", "A", ["d", "b"], 4), game("r6", "A", ["b", "a"], 5)]

    async def body() -> dict[tuple[str, str], tuple[float, float]]:
        ctx = context(redis_url)
        lagging = Lagging(ctx, random.Random(1))
        previous: dict[str, int] = {}
        for start in (0, 2, 4):
            batch = await lagging.phase_one(rounds[start:start + 2])
            for sections in sections_by_round(batch.messages):
                for section in sections:
                    update = PlayerUpdate.from_json(section)
                    assert update.previous_seqs is not None
                    for player, before in zip(update.players, update.previous_seqs):
                        assert before == previous.get(player, 0), (update.round_id, player)
                for section in sections:
                    update = PlayerUpdate.from_json(section)
                    previous.update(dict.fromkeys(update.players, update.seq))
        assert lagging.unblocked == 0
        assert ctx.posteriors.hits == 5, "c, a in batch 2; d, b (r2's), a in batch 3"
        await lagging.drain()
        got = await stored_states(ctx, players_of(rounds))
        await ctx.store.close()
        return got

    assert_equals_replay(rounds, asyncio.run(body()))


async def _states(url: str, rounds: Sequence[RoundResult]) -> dict[tuple[str, str], tuple[float, float]]:
    ctx = context(url)
    got = await stored_states(ctx, players_of(rounds))
    await ctx.store.close()
    return got


def _priors(players: Sequence[str], waits_for: Sequence[int], blocked: Sequence[str]) -> Priors:
    n = len(players)
    return Priors(mu=np.full(n, np.nan), sigma=np.full(n, np.nan), last_time=np.full(n, np.nan),
                  known=np.zeros(n, dtype=bool), blocked=list(blocked), waiting_on=sorted(set(waits_for)),
                  last_seq=np.zeros(n, dtype=np.int64), waits_for=np.asarray(waits_for, dtype=np.int64),
                  states=[None] * n)


@pytest.mark.parametrize("event", ["same", "counter", "held", "seq_again", "other_seq", "evicted"])
def test_fill_uses_an_entry_only_while_it_is_valid(event: str) -> None:
    """An entry lets a held player through only for the round it was computed for, under the
    corrections counter it was computed under, and not after a hold, a seq handed out again or
    its eviction."""
    cache = PosteriorCache(capacity=1 if event == "evicted" else 10)
    blob = b"posterior of round 5"
    cache.observe("A", corrections=0, new_seqs=[5])
    cache.keep("A", ["a"], np.array([5]), [blob])
    if event == "evicted":
        cache.keep("B", ["z"], np.array([1]), [blob])
    if event == "held":  # phase one drops a held ladder's entries (phase_one._observe)
        cache.drop("A")
    changes = {"counter": dict(corrections=1), "held": dict(corrections=0),
               "seq_again": dict(corrections=0, new_seqs=[5])}
    cache.observe("A", **changes.get(event, dict(corrections=0, new_seqs=[6])))  # type: ignore[arg-type]
    priors = _priors(["a", "x"], [7 if event == "other_seq" else 5, 3], ["a", "x"])
    cache.fill("A", ["a", "x"], priors)
    if event == "same":
        assert priors.blocked == ["x"] and priors.waiting_on == [3]
        assert priors.states == [blob, None] and priors.last_seq.tolist() == [5, 0]  # type: ignore[union-attr]
    else:
        assert priors.blocked == ["a", "x"] and priors.states == [None, None]


def test_a_batch_filling_more_than_half_the_cache_keeps_nothing() -> None:
    """A large round's players would evict every other entry: such a batch keeps nothing."""
    cache = PosteriorCache(capacity=10)
    assert cache.worth_keeping(5) and not cache.worth_keeping(6) and not cache.worth_keeping(0)
    assert not PosteriorCache(capacity=0).worth_keeping(1)


def test_a_correction_between_batches_drops_the_ladder(redis_url: str) -> None:
    """Batch 1 (cached), phase two, a void of its first round (re-rates b and c), batch 2: the
    corrections counter moved, so every entry of the ladder is gone (c's too, not in batch 2) and
    batch 2 rates from the corrected states: Redis equals the replay of the corrected history."""
    rounds = [game("r1", "A", ["a", "b"], 0), game("r2", "A", ["b", "c"], 1), game("r3", "A", ["c", "d"], 2)]

    async def body() -> None:
        ctx = context(redis_url)
        lagging = Lagging(ctx, random.Random(2))
        await lagging.phase_one(rounds[:2])
        assert _live(ctx, "A", "c")
        await lagging.drain()
        result = await handle_correction(ctx, json.dumps({"kind": "void", "ladder": "A", "round_id": "r1"}).encode())
        assert result.outcome == "applied", result
        await finish_correction(ctx, result)
        await lagging.phase_one(rounds[2:])
        assert not _live(ctx, "A", "a") and not _live(ctx, "A", "b"), "the correction dropped the ladder"
        assert _live(ctx, "A", "c") and _live(ctx, "A", "d"), "batch 2's own posteriors"
        await lagging.drain()
        await ctx.store.close()

    asyncio.run(body())
    corrected = [rounds[1], rounds[2]]
    assert_equals_replay(corrected, asyncio.run(_states(redis_url, corrected)))


def test_a_repair_after_the_cache_was_used_holds_and_drops_the_ladder(redis_url: str) -> None:
    """Batch 2 is rated from batch 1's cached posteriors; then phase two gives up on round 1's
    section (``release_update``: its players skip it, the ladder is held, a void is due). Batch 3
    of the held ladder waits and drops the ladder's entries; the repair re-rates batch 2 without
    round 1, and Redis ends as the replay without round 1."""
    rounds = [game("r1", "A", ["a", "b"], 0), game("r2", "A", ["a", "c"], 1), game("r3", "A", ["c", "b"], 2)]

    async def body() -> None:
        ctx = context(redis_url)
        lagging = Lagging(ctx, random.Random(3))
        first = await lagging.phase_one(rounds[:1])
        await lagging.phase_one(rounds[1:2])
        assert ctx.posteriors.hits == 1 and lagging.unblocked == 0, "a went through with r1's posterior"
        lagging.pending.clear()
        sections = [s for m in first.messages for s in split_sections(m.value)]
        repair = None
        for section in sections:
            repair = await release_update(ctx, section, "test: phase two gave up")
        assert repair is not None
        second = await _stored_batch(ctx, "A", "r2")
        await _apply(ctx, second)
        third = await handle_rounds(ctx, incoming(rounds[2:]))
        assert third.deferred == [0], "the held ladder's round waits"
        assert not _live(ctx, "A", "a") and not _live(ctx, "A", "c"), "the hold dropped the ladder"
        result = await handle_correction(ctx, repair.to_json().encode())
        assert result.outcome == "applied", result
        await finish_correction(ctx, result)
        one = await handle_one(ctx, Incoming(incoming(rounds[2:])[0].value))
        assert one.outcome == "rated"
        await _apply(ctx, one.updates)
        await ctx.store.close()

    asyncio.run(body())
    corrected = [rounds[1], rounds[2]]
    assert_equals_replay(corrected, asyncio.run(_states(redis_url, corrected)))


def _live(ctx: PipelineContext, ladder: str, player: str) -> bool:
    """Whether the cache holds a live entry of the player (an entry of the ladder's generation)."""
    cache = ctx.posteriors
    state, entry = cache._ladders.get(ladder), cache._entries.get((ladder, player))
    return state is not None and entry is not None and entry[0] == state.generation


async def _stored_batch(ctx: PipelineContext, ladder: str, round_id: str) -> list[FanOutMessage]:
    return await phase_one.stored_fanout(ctx, ladder, round_id)


async def _apply(ctx: PipelineContext, messages: Sequence[FanOutMessage]) -> None:
    async def send(records: list, what: str) -> None:  # type: ignore[type-arg]
        pass

    await phase_two_batch(ctx, NAMES, [Incoming(m.value, m.key, Origin("player-updates", m.partition, i))
                                       for i, m in enumerate(messages)], send)


def _keep_one_by_one(cache: PosteriorCache, ladder: str, players: list[str], seqs: list[int], states: list[bytes]) -> None:
    """:meth:`PosteriorCache.keep` player by player (the reference its C-level loops must equal)."""
    from stream.pipeline.posteriors import _Ladder

    state = cache._ladders.setdefault(ladder, _Ladder())
    for player, seq, blob in zip(players, seqs, states):
        if seq > 0:
            cache._entries[(ladder, player)] = (state.generation, seq, blob)
            cache._entries.move_to_end((ladder, player))
    state.high = max(state.high, max(seqs, default=0))
    while len(cache._entries) > cache.capacity:
        cache._entries.popitem(last=False)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 8), st.lists(st.tuples(st.sampled_from(["L", "M"]), st.lists(
    st.tuples(st.sampled_from(["a", "b", "c", "d", "e"]), st.integers(-1, 9)), max_size=6), st.booleans()), max_size=8))
def test_keep_equals_keeping_player_by_player(capacity: int, calls: list[tuple[str, list[tuple[str, int]], bool]]) -> None:
    fast, slow = PosteriorCache(capacity), PosteriorCache(capacity)
    for ladder, rows, drop in calls:
        players, seqs = [p for p, _ in rows], [q for _, q in rows]
        states = [f"{p}{q}".encode() for p, q in rows]
        fast.keep(ladder, players, np.asarray(seqs, dtype=np.int64), states)
        _keep_one_by_one(slow, ladder, players, seqs, states)
        assert list(fast._entries.items()) == list(slow._entries.items())
        assert {k: (v.generation, v.high) for k, v in fast._ladders.items()} == \
            {k: (v.generation, v.high) for k, v in slow._ladders.items()}
        if drop:
            fast.drop(ladder)
            slow.drop(ladder)
