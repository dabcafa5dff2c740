"""Two phase-one attempts on one ladder after a crash (issue 26, defect 2), each interleaving forced
deterministically, without Kafka, on a single Redis and on a real Redis Cluster (where a batch's
marks and fan-outs go in two round trips):

* a batch waits in its re-send of a pending round (``ctx.outbox.resend``, the send the batch awaits)
  past its ladder lease, and the sweeper, taking the lease, completes the round a crashed worker
  left ``registered`` and phase two applies it: the batch must not rate that round from the posterior that already holds it, nor
  store its later rounds of the ladder from its own chain (it used to: a later round's
  performances came from the wrong prior, and Redis differed from replay);
* the sweeper claims a ladder's later round (due earlier) while an earlier one is still
  ``registered`` and unmarked: it must complete the earlier one first (it used to rate the later
  one from priors without the earlier round).

Each test ends with Redis equal to the in-process replay (``stream.batch.replay``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

import pytest

from stream.contracts import RoundResult
from stream.pipeline.context import PipelineContext
from stream.pipeline.messages import FanOutMessage, Incoming, Origin
from stream.pipeline.outbox import ListOutbox, Outgoing
from stream.pipeline.lease import Leases
from stream.pipeline.phase_one import complete_registered, handle_rounds
from stream.pipeline.rounds_batches import phase_one_batch
from stream.pipeline.sweeper import sweep
from stream.pipeline.updates_batches import phase_two_batch
from stream.settings import Settings
from stream.store import keys
from stream.store.store import NewRound

from test_phase_one_batch import (NAMES, PARTITIONS, assert_equals_replay, complete_as_sweeper, context, game, incoming, players_of,
                                  stored_states)
from tests.store_calls import mark_queued


LEASE_MS = Settings().phase_one_lease_ms


@pytest.fixture(params=["single", "real-cluster"])
def url_and_cluster(request: pytest.FixtureRequest) -> tuple[str, bool]:
    """Every test on a single Redis and on the session's three-node Redis Cluster."""
    if request.param == "real-cluster":
        return request.getfixturevalue("redis_cluster_url"), True
    return request.getfixturevalue("redis_url"), False


class Relay(ListOutbox):
    """An outbox whose re-sends go through ``relay`` at once (set by :func:`worker`)."""

    relay: Callable[[list[FanOutMessage]], Awaitable[None]]

    async def resend(self, messages: list[FanOutMessage]) -> None:
        await self.relay(messages)


def worker(url_and_cluster: tuple[str, bool], relay: Callable[[list[FanOutMessage]], Awaitable[None]] | None = None,
           **settings: object) -> PipelineContext:
    """One worker's context (its own posterior cache); its re-sends go through ``relay``, by default
    its ``phase_two``."""
    url, cluster = url_and_cluster
    outbox = Relay(PARTITIONS)
    ctx = context(url, outbox, redis_cluster=cluster, **{"sweep_timeout_s": 60.0, **settings})
    outbox.relay = relay or (lambda messages: phase_two(ctx, [m.value for m in messages]))
    return ctx


async def phase_two(ctx: PipelineContext, values: Sequence[bytes]) -> None:
    """The ``player-updates`` agent on these messages (sections split, the chain rule)."""
    async def send(records: list[Outgoing], what: str) -> None:
        pass

    await phase_two_batch(ctx, NAMES, [Incoming(v, None, Origin("player-updates", 0, i)) for i, v in enumerate(values)],
                          send)


async def sweeper_after_lapse(sweeper: PipelineContext, ladder: str, round_id: str) -> list[FanOutMessage]:
    """The sweeper completes ``round_id`` once the lease of the batch rating the ladder lapsed (the
    batch waited past PHASE_ONE_LEASE_MS, not renewing: its lease key gone), under a lease of its
    own (a higher fencing token: the batch's stores of the ladder are fenced from then on)."""
    await sweeper.store.client.delete(keys.lease(ladder))
    return await complete_as_sweeper(sweeper, ladder, round_id)


async def crashed_attempt(ctx: PipelineContext, round_: RoundResult) -> None:
    """What a worker killed in its batch's store leaves of ``round_`` (``phase_one.crash_in_batch_store``):
    registered (its body kept for the sweeper), its players marked queued, no fan-out."""
    registrations, _ = await ctx.store.register_batch(
        [NewRound(round_.ladder, round_.round_id, round_.content_hash(), round_.occurred_at, 0.0, round_.field_size,
                  body=round_.to_json().encode(), due_at=1e18)], [])
    await mark_queued(ctx.store, round_.ladder, round_.players(), registrations[0].seq)


def test_a_batch_overtaken_in_its_resend_wait_by_the_sweeper_stores_nothing_from_its_chain(
        url_and_cluster: tuple[str, bool]) -> None:
    """r1 is pending (stored, not applied); a crashed worker left r2 registered with a and c marked
    queued for it (a's queued_prev: r1). The redelivered batch [r1, r2, r3] re-sends r1 and, while
    that send is awaited (past the batch's lease), phase two applies r1, the sweeper completes r2
    and phase two applies it.
    The batch then re-reads a (held at registration): his state holds r2 already. Then r2, r3 and
    r4 are handled one by one (r2 is the sweeper's, r3 and r4 rated from the stored posteriors)."""
    rounds = [game("r1", "L", ["a", "b"], 0), game("r2", "L", ["a", "c"], 1), game("r3", "L", ["c", "d"], 2),
              game("r4", "L", ["d", "a", "b"], 3)]

    async def body() -> tuple[dict[tuple[str, str], tuple[float, float]], list[str | None]]:
        fired = []

        async def resend_wait(messages: list[FanOutMessage]) -> None:
            if not fired:  # the batch's re-send of r1: the sweeper and phase two go first
                fired.append(True)
                await phase_two(sweeper, [m.value for m in messages])
                assert await sweeper_after_lapse(sweeper, "L", "r2"), "the sweeper completed r2"
            await phase_two(batch_worker, [m.value for m in messages])

        crashed, batch_worker, sweeper = worker(url_and_cluster), worker(url_and_cluster, resend_wait), worker(url_and_cluster)
        await handle_rounds(crashed, incoming(rounds[:1]))  # r1 stored, its send lost
        await crashed_attempt(crashed, rounds[1])  # the batch's worker has no posterior of r1 cached

        async def enqueue(records: list[Outgoing]) -> None:
            await phase_two(batch_worker, [r.value for r in records if r.topic == NAMES.player_updates])

        results = await phase_one_batch(batch_worker, NAMES, incoming(rounds), enqueue)
        assert fired, "the batch never waited in a re-send"
        got = await stored_states(batch_worker, players_of(rounds))
        for ctx in (crashed, batch_worker, sweeper):
            await ctx.store.close()
        return got, [r.outcome for r in results]

    got, outcomes = asyncio.run(body())
    assert_equals_replay(rounds, got)
    # r1 re-sent by the batch; r2 (rated by the sweeper's copy) a duplicate, r3 and r4 rated one by one
    assert outcomes == ["resent", "duplicate", "rated", "rated"], outcomes


def test_the_sweeper_completes_a_ladder_s_earlier_registered_round_before_a_later_one(
        url_and_cluster: tuple[str, bool]) -> None:
    """r1 and r2 (sharing a) were both left registered, unmarked (their phase one never ran); the
    sweeper claims r2 (due first) but not r1 (not due yet). It must complete r1 first, then r2
    from a's posterior after r1."""
    rounds = [game("r1", "L", ["a", "b"], 0), game("r2", "L", ["c", "a"], 1)]

    async def body() -> dict[tuple[str, str], tuple[float, float]]:
        sweeper = worker(url_and_cluster)
        for round_, due_at in zip(rounds, (1e18, 0.0)):  # r2 is due, r1 is not
            await sweeper.store.register_batch(
                [NewRound("L", round_.round_id, round_.content_hash(), round_.occurred_at, 0.0, round_.field_size,
                          body=round_.to_json().encode(), due_at=due_at)], [])
        report = await asyncio.wait_for(sweep(sweeper), timeout=60.0)
        assert report.completed == [("L", "r2")]
        statuses = await sweeper.store.round_statuses("L", ["r1", "r2"])
        assert statuses == ["rated", "rated"], statuses
        got = await stored_states(sweeper, players_of(rounds))
        await sweeper.store.close()
        return got

    assert_equals_replay(rounds, asyncio.run(body()))


def test_a_batch_racing_the_sweeper_on_a_round_then_phase_two_equals_replay(url_and_cluster: tuple[str, bool]) -> None:
    """The crashed worker's r2 is completed by the sweeper while the redelivered batch [r2, r3, r4]
    waits at its barrier for r1 (applied by phase two only after the sweeper stored r2 and phase
    two applied it too), or, racing the sweeper, passes its barrier first: either way Redis equals
    replay. Both attempts pass the fence here (the sweeper stores with the ladder's current token,
    as two attempts of one lease holder would): what is tested is the chain rule and the barrier
    behind the lease."""
    rounds = [game("r1", "L", ["a", "b"], 0), game("r2", "L", ["a", "c"], 1), game("r3", "L", ["c", "a"], 2),
              game("r4", "L", ["b", "d"], 3)]

    async def body() -> dict[tuple[str, str], tuple[float, float]]:
        crashed, batch_worker, sweeper = worker(url_and_cluster), worker(url_and_cluster), worker(url_and_cluster)
        r1 = await handle_rounds(crashed, incoming(rounds[:1]))  # r1 stored, not applied yet
        await crashed_attempt(crashed, rounds[1])

        async def enqueue(records: list[Outgoing]) -> None:
            await phase_two(batch_worker, [r.value for r in records if r.topic == NAMES.player_updates])

        batch = asyncio.create_task(phase_one_batch(batch_worker, NAMES, incoming(rounds[1:]), enqueue))
        for _ in range(20):  # the batch is held at its barrier by a (r1 not applied)
            await asyncio.sleep(0.005)
        assert not batch.done(), "the batch rated r2 before r1 was applied"
        await phase_two(sweeper, [m.value for m in r1.messages])  # r1 applied
        # the sweeper rates r2 (or finds it stored: the batch's barrier may pass first), phase two applies it
        (token,) = await sweeper.store.client.hmget(keys.fence("L"), "token")
        await complete_registered(sweeper, "L", "r2", Leases("sweeper", LEASE_MS, {"L": int(token)}))
        await asyncio.wait_for(batch, timeout=60.0)
        got = await stored_states(batch_worker, players_of(rounds))
        for ctx in (crashed, batch_worker, sweeper):
            await ctx.store.close()
        return got

    assert_equals_replay(rounds, asyncio.run(body()))


def test_the_barrier_never_returns_a_prior_that_holds_the_round(url_and_cluster: tuple[str, bool]) -> None:
    """A player whose state already holds round 2 (last_seq 2, as the sweeper's copy of round 2
    applied leaves him: queued_prev still names round 1) is no prior of round 2: the barrier
    stops the attempt (RoundOvertaken), whatever the order of the players asked (a re-read after
    a wait: the first test)."""
    from stream.pipeline.barrier import RoundOvertaken, wait_for_priors
    from stream.store import keys

    async def body() -> list[list[str]]:
        ctx = worker(url_and_cluster)
        client = ctx.store.client
        await client.hset(keys.player("L", "a"), mapping={"queued_seq": 2, "queued_prev": 1, "last_seq": 2})
        await client.hset(keys.player("L", "b"), mapping={"queued_seq": 1, "last_seq": 1})
        caught = []
        for players in (["a", "b"], ["b", "a"]):
            with pytest.raises(RoundOvertaken) as raised:
                await wait_for_priors(ctx.store, ctx.settings, "L", players, 2, "r2")
            caught.append(raised.value.players)
        through = await wait_for_priors(ctx.store, ctx.settings, "L", ["b"], 2, "r2")
        assert through.last_seq is not None and through.last_seq.tolist() == [1]
        await ctx.store.close()
        return caught

    assert asyncio.run(body()) == [["a"], ["a"]]
