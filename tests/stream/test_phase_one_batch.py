"""Phase one of a batch of rounds as a unit (``handle_rounds``), without Kafka, against the
session's private redis-server: outcomes as one by one, the batch's chains equal replay, and a
worker killed mid-way through the batch's store leaves nothing its next attempt misreads."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.batch.replay import replay
from stream.contracts import PlayerUpdate, RoundResult, Standing, validate
from stream.engine import preset
from stream.pipeline.context import PipelineContext
from stream.pipeline.messages import FanOutMessage, Incoming, Origin
from stream.pipeline.outbox import ListOutbox, Outbox, Outgoing, TopicNames
from stream.pipeline.lease import sweeper_lease
from stream.pipeline.phase_one import BatchResult, complete_registered, handle_rounds
from stream.pipeline.phase_two import handle_updates
from stream.pipeline.messages import split_sections
from stream.pipeline.updates_batches import phase_two_batch
from stream.settings import Settings
from tests.store_calls import mark_queued, stored_player
from tests.engine.oracles import final_state

PARTITIONS = 4
TOLERANCE = 1e-9


def game(round_id: str, ladder: str, players: Sequence[str], day: float, weight: float = 1.0) -> RoundResult:
    return RoundResult(round_id=round_id, ladder=ladder, occurred_at=1.7e9 + 86_400.0 * day, weight=weight,
                       standings=[Standing(p, i + 1) for i, p in enumerate(players)])


def context(redis_url: str, outbox: Outbox | None = None, **settings_: object) -> PipelineContext:
    return PipelineContext.from_settings(Settings(redis_url=redis_url, partitions=PARTITIONS, barrier_poll_s=0.001,
                                                  barrier_max_poll_s=0.005, **settings_),  # type: ignore[arg-type]
                                         outbox=outbox)


def incoming(rounds: Sequence[RoundResult | bytes]) -> list[Incoming]:
    return [Incoming(r if isinstance(r, bytes) else r.to_json().encode()) for r in rounds]


def sections_by_round(messages: Sequence[FanOutMessage]) -> list[list[bytes]]:
    """The batch's sections grouped per round, rounds in (ladder, seq) order: what phase two
    applies one round after another (it applies each round's players against stored state)."""
    rounds: dict[tuple[str, int], list[bytes]] = {}
    for message in messages:
        for section in split_sections(message.value):
            update = PlayerUpdate.from_json(section)
            rounds.setdefault((update.ladder, update.seq), []).append(section)
    return [rounds[key] for key in sorted(rounds)]


NAMES = TopicNames(player_updates="player-updates", rating_changes="rating-changes", rounds_dlq="rounds-dlq")


async def apply(ctx: PipelineContext, batch: BatchResult) -> list[Outgoing]:
    """Phase two of the batch's messages as the ``player-updates`` agent does it (sections
    split, applied by the chain rule); returns what it sent."""
    sent: list[Outgoing] = []

    async def send(records: list[Outgoing], what: str) -> None:
        sent.extend(records)

    await phase_two_batch(ctx, NAMES, [Incoming(m.value, m.key, Origin("player-updates", m.partition, i))
                                       for i, m in enumerate(batch.messages)], send)
    return sent


async def complete_as_sweeper(ctx: PipelineContext, ladder: str, round_id: str) -> list[FanOutMessage]:
    """``phase_one.complete_registered`` as the worker's sweeper runs it: under its own lease of
    the ladder (``lease.sweeper_lease``), which no other attempt may hold."""
    owner = f"{ctx.lease_owner}:sweeper"
    async with sweeper_lease(ctx.store, ladder, owner, ctx.settings.phase_one_lease_ms) as leases:
        assert leases.token(ladder), f"the lease of ladder {ladder} is another attempt's"
        return await complete_registered(ctx, ladder, round_id, leases)


async def stored_states(ctx: PipelineContext, players: dict[str, set[str]]) -> dict[tuple[str, str], tuple[float, float]]:
    out = {}
    for ladder, names in players.items():
        for p in names:
            stored = await stored_player(ctx.store, ladder, p)
            out[(ladder, p)] = (float(stored["mu"]), float(stored["sigma"]))
    return out


def assert_equals_replay(rounds: Sequence[RoundResult], got: dict[tuple[str, str], tuple[float, float]]) -> None:
    reference = replay(rounds, preset(Settings().engine_preset))
    assert got, "nothing stored"
    for (ladder, player), (mu, sigma) in got.items():
        state = final_state(reference, ladder, player)
        assert abs(mu - state.mu) <= TOLERANCE and abs(sigma - state.sigma) <= TOLERANCE, (ladder, player)


def duels(seed: int, count: int, pool: int, ladders: Sequence[str] = ("A", "B"), size: int = 2) -> list[RoundResult]:
    """Small rounds of a small pool over two ladders: a player meets itself again and again
    within one batch (deep chains of waves), and plays in both ladders."""
    rng = random.Random(seed)
    names = [f"p{i}" for i in range(pool)]
    return [game(f"g{k}", rng.choice(ladders), rng.sample(names, size), day=k * 0.37) for k in range(count)]


def players_of(rounds: Sequence[RoundResult]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for r in rounds:
        out.setdefault(r.ladder, set()).update(r.players())
    return out


def test_one_batch_of_many_small_rounds_of_two_ladders_equals_replay(redis_url: str) -> None:
    """120 duels and 40 four-player rounds from a pool of 6, two ladders, in batches of 64: each
    player has many rounds per batch (waves ~40 deep); every section names its prior's round."""
    rounds = duels(seed=1, count=120, pool=6) + duels(seed=2, count=40, pool=6, size=4)
    rounds = [game(f"x{k}", r.ladder, r.players(), day=k * 0.37) for k, r in enumerate(rounds)]

    async def body() -> dict[tuple[str, str], tuple[float, float]]:
        ctx = context(redis_url)
        last: dict[tuple[str, str], int] = {}
        for start in range(0, len(rounds), 64):
            batch = await handle_rounds(ctx, incoming(rounds[start:start + 64]))
            assert [r.outcome for r in batch.results if r] == ["rated"] * len(rounds[start:start + 64])
            assert len(batch.messages) <= PARTITIONS, "one message per partition per batch"
            for sections in sections_by_round(batch.messages):
                for section in sections:
                    validate("player-update", section)
                    update = PlayerUpdate.from_json(section)
                    assert update.previous_seqs is not None
                    for player, previous in zip(update.players, update.previous_seqs):
                        assert previous == last.get((update.ladder, player), 0)
                for section in sections:
                    update = PlayerUpdate.from_json(section)
                    last.update({(update.ladder, p): update.seq for p in update.players})
            sent = await apply(ctx, batch)
            changes = [r for r in sent if r.topic == "rating-changes"]
            assert len(changes) == sum(r.field_size for r in rounds[start:start + 64]) and len(changes) == len(sent)
        got = await stored_states(ctx, players_of(rounds))
        await ctx.store.close()
        return got

    assert_equals_replay(rounds, asyncio.run(body()))


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 8), st.lists(st.integers(1, 20), min_size=1, max_size=6))
def test_any_batching_equals_replay(redis_server, seed: int, pool: int, cuts: list[int]) -> None:  # type: ignore[no-untyped-def]
    """Property: however the stream is cut into batches, Redis ends as replay (one by one)."""
    import redis

    client = redis.Redis.from_url(redis_server.url)
    client.flushall()
    client.close()
    rng = random.Random(seed)
    rounds = [game(f"h{k}", rng.choice("AB"), rng.sample([f"p{i}" for i in range(pool)], rng.randint(2, min(4, pool))),
                   day=k * rng.random()) for k in range(sum(cuts))]

    async def body() -> dict[tuple[str, str], tuple[float, float]]:
        ctx = context(redis_server.url)
        start = 0
        for size in cuts:
            await apply(ctx, await handle_rounds(ctx, incoming(rounds[start:start + size])))
            start += size
        got = await stored_states(ctx, players_of(rounds))
        await ctx.store.close()
        return got

    assert_equals_replay(rounds, asyncio.run(body()))


def test_outcomes_per_message_as_one_by_one(redis_url: str) -> None:
    """A batch mixing a bad message, an outcome-free round, a round twice, a conflicting
    re-use; then the same batch again: ``resent`` for pending rounds, ``duplicate`` for rated."""
    first = game("r1", "A", ["a", "b"], 0)
    tie = RoundResult(round_id="t", ladder="A", occurred_at=1.7e9, standings=[Standing("a", 1)])  # one entry
    clash = game("r1", "A", ["a", "c"], 0)
    second = game("r2", "A", ["b", "a"], 1)
    events = incoming([first, b"{not json", tie, first, clash, second])

    async def body() -> None:
        outbox = ListOutbox(PARTITIONS)
        ctx = context(redis_url, outbox)
        batch = await handle_rounds(ctx, events)
        outcomes = [r.outcome if r else None for r in batch.results]
        assert outcomes == ["rated", "rejected", "no_outcome", "resent", "rejected", "rated"]
        assert batch.results[1] and batch.results[1].dead_letter is not None
        assert batch.results[4] and batch.results[4].dead_letter and batch.results[4].dead_letter.reason == "conflict"
        again = await handle_rounds(ctx, events)
        assert [r.outcome if r else None for r in again.results] == [
            "resent", "rejected", "duplicate", "resent", "rejected", "resent"]
        sent = sorted(s for m in batch.messages for s in split_sections(m.value))
        assert again.messages == [] and sorted(s for m in outbox.resent for s in split_sections(m.value)) == sent, \
            "the stored sections, re-sent at once"
        await apply(ctx, batch)
        third = await handle_rounds(ctx, events)
        assert [r.outcome if r else None for r in third.results] == [
            "duplicate", "rejected", "duplicate", "duplicate", "rejected", "duplicate"]
        assert third.messages == []
        await ctx.store.close()

    asyncio.run(body())


def test_worker_killed_midway_through_the_batch_store_leaves_no_stale_prior(redis_url: str) -> None:
    """The batch's store is one pipeline, not a transaction: killed after round 1's fan-out and
    round 2's queued marks (round 2 shares player a with round 1), the next attempt re-sends
    round 1 and must NOT rate round 2 from a's stored state until round 1 is applied to it
    (mark_queued.lua keeps queued_prev); then everything equals replay."""
    rounds = [game("r1", "A", ["a", "b"], 0), game("r2", "A", ["c", "a"], 1), game("r3", "A", ["b", "c"], 2)]

    async def body() -> dict[tuple[str, str], tuple[float, float]]:
        ctx = context(redis_url)
        store = ctx.store
        original = store.queue_batch

        async def killed(queued, release=None):  # type: ignore[no-untyped-def]
            await original(queued[:1])  # round 1 whole
            await mark_queued(store, queued[1].ladder, queued[1].players, queued[1].seq)  # round 2's marks only
            raise RuntimeError("killed mid-pipeline")

        store.queue_batch = killed  # type: ignore[method-assign]
        try:
            await handle_rounds(ctx, incoming(rounds))
        except RuntimeError:
            pass
        store.queue_batch = original  # type: ignore[method-assign]
        assert (await store.round_record("A", "r1"))["status"] == "pending"
        assert (await store.round_record("A", "r2"))["status"] == "registered"
        again = asyncio.create_task(handle_rounds(ctx, incoming(rounds)))
        for _ in range(30):
            await asyncio.sleep(0.005)
        assert not again.done(), "round 2 read player a's prior before round 1 was applied"
        await handle_updates(ctx, [m.value for m in await _stored(ctx, "A", "r1")])
        batch = await asyncio.wait_for(again, timeout=30)
        assert [r.outcome if r else None for r in batch.results] == ["resent", "rated", "rated"]
        await apply(ctx, batch)
        got = await stored_states(ctx, players_of(rounds))
        await store.close()
        return got

    assert_equals_replay(rounds, asyncio.run(body()))


async def _stored(ctx: PipelineContext, ladder: str, round_id: str) -> list[FanOutMessage]:
    from stream.pipeline.phase_one import stored_fanout

    return await stored_fanout(ctx, ladder, round_id)


def test_one_by_one_path_names_the_prior_round_too(redis_url: str) -> None:
    """``handle_one`` (the fallback, a batch of one) sets each entry's ``previous_seq``: the player's last
    applied round (0 for a newcomer), as the batch path does."""
    from stream.pipeline.phase_one import handle_one

    async def body() -> list[dict[str, int]]:
        ctx = context(redis_url)
        out = []
        for r in [game("r1", "A", ["a", "b"], 0), game("r2", "A", ["c", "a"], 1)]:
            result = await handle_one(ctx, Incoming(r.to_json().encode()))
            updates = [PlayerUpdate.from_json(m.value) for m in result.updates]
            out.append({p: s for u in updates for p, s in zip(u.players, u.previous_seqs or [])})
            await handle_updates(ctx, [m.value for m in result.updates])
        await ctx.store.close()
        return out

    assert asyncio.run(body()) == [{"a": 0, "b": 0}, {"c": 0, "a": 1}]


def test_a_message_alone_is_a_batch_of_one_handled_again_while_deferred(monkeypatch: pytest.MonkeyPatch) -> None:
    """``handle_one``: ``handle_rounds`` of the message alone; while a correction holds its ladder
    it is handled again (every HOLD_POLL_S, without limit), any other deferral at most
    ORDER_ATTEMPTS times, then it raises (the caller's retries and set-aside take over). Its
    result carries every message the batch leaves to send."""
    from stream.pipeline import phase_one

    sent = [FanOutMessage(0, b"a", b"{}")]
    answers: list[BatchResult] = []
    calls: list[Sequence[Incoming]] = []

    async def fake(ctx: PipelineContext, events: Sequence[Incoming]) -> BatchResult:
        calls.append(events)
        return answers.pop(0)

    monkeypatch.setattr(phase_one, "handle_rounds", fake)
    ctx = PipelineContext.from_settings(Settings(redis_url="redis://127.0.0.1:1/0", hold_poll_s=0.001))
    event = Incoming(b"{}", origin=Origin(offset=7))
    held = BatchResult([None], deferred=[0], on_hold={"L"})
    lost = BatchResult([None], deferred=[0])
    answers += [held] * 5 + [lost, lost, BatchResult([phase_one.PhaseOneResult("rated", "L", "r")], sent)]
    result = asyncio.run(phase_one.handle_one(ctx, event))
    assert result.outcome == "rated" and result.updates == sent
    assert len(calls) == 8 and all(list(events) == [event] for events in calls)
    answers[:] = [lost] * phase_one.ORDER_ATTEMPTS + [BatchResult([None])]
    calls.clear()
    with pytest.raises(RuntimeError, match=f"offset 7 was deferred {phase_one.ORDER_ATTEMPTS} times"):
        asyncio.run(phase_one.handle_one(ctx, event))
    assert len(calls) == phase_one.ORDER_ATTEMPTS
