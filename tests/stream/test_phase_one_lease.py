"""One phase-one rater per ladder at a time (issue 26, item 4: ``stream/pipeline/lease.py``), each
interleaving forced deterministically through the fault seam (``faults.at``), without Kafka, on a
single Redis and on a real Redis Cluster:

* a zombie: a worker whose batch is paused past its lease (as after a rebalance) while another
  worker takes the ladder's lease; the zombie's store is refused (``fenced``), it sends nothing,
  and Redis equals the replay;
* a worker's sweeper finds the ladder leased by the worker's own batch: it leaves the round a
  crashed worker left to the batch, which completes it;
* a crashed holder's lease lapses and the next worker rates; a holder that does not let go leaves
  the batch's round registered (``fenced``), never lost: the sweeper completes it later.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from stream.pipeline import faults
from stream.pipeline.context import PipelineContext
from stream.pipeline.phase_one import handle_rounds
from stream.pipeline.sweeper import sweep
from stream.store.store import NewRound

from test_phase_one_batch import assert_equals_replay, context, game, incoming, players_of, stored_states
from test_phase_one_races import phase_two, url_and_cluster, worker as races_worker  # noqa: F401 - the fixture

LEASE_MS = 200


def worker(url_and_cluster: tuple[str, bool], **settings: object) -> PipelineContext:
    """One worker (its own lease owner and posterior cache); its re-sends go through phase two."""
    return races_worker(url_and_cluster, phase_one_lease_ms=LEASE_MS, hold_poll_s=0.01, **settings)


@pytest.fixture(autouse=True)
def no_fault_hook() -> Any:
    """Each test installs its hook on the fault seam; none is left behind."""
    yield
    faults.install(None)


def test_a_zombie_s_store_is_fenced_once_another_worker_took_the_ladder(url_and_cluster: tuple[str, bool]) -> None:
    """The zombie rates [r1, r2, r3] and is paused before its store past its lease; the new owner
    registers the same batch (redelivered after a rebalance), takes the lapsed lease and rates it,
    then waits before its own store while the zombie resumes and stores: refused, every round
    ``fenced``, nothing sent. The new owner stores and sends; the zombie's next batch (the lease
    free again) rates r4 from the stored state. Redis equals the replay."""
    rounds = [game("r1", "L", ["a", "b"], 0), game("r2", "L", ["a", "c"], 1), game("r3", "L", ["c", "d"], 2),
              game("r4", "L", ["d", "a"], 3)]

    async def body() -> tuple[dict[tuple[str, str], tuple[float, float]], list[str], list[str], int]:
        zombie, owner = worker(url_and_cluster), worker(url_and_cluster)
        owner_reached, zombie_stored = asyncio.Event(), asyncio.Event()
        tasks: list[asyncio.Task[Any]] = []

        async def hook(place: str, **context: Any) -> bool:
            if tasks and asyncio.current_task() is tasks[0]:  # the new owner
                if place == faults.AFTER_PRIORS_BEFORE_FANOUT_STORED:
                    owner_reached.set()
                    await zombie_stored.wait()  # the zombie stores first
            elif place == faults.AFTER_PRIORS_BEFORE_FANOUT_STORED and not tasks:  # the zombie, rated
                await asyncio.sleep(LEASE_MS / 1000 * 1.5)  # paused past its lease
                tasks.append(asyncio.create_task(handle_rounds(owner, incoming(rounds[:3]))))
                await owner_reached.wait()  # the new owner rated from the lease it took
            elif place == faults.AFTER_FANOUT_STORED_BEFORE_SEND and tasks and not zombie_stored.is_set():
                zombie_stored.set()
            return False

        faults.install(hook)
        stale = await handle_rounds(zombie, incoming(rounds[:3]))
        fresh = await asyncio.wait_for(tasks[0], timeout=60.0)
        faults.install(None)
        assert stale.messages == [], "a fenced batch sends nothing"
        await phase_two(owner, [m.value for m in fresh.messages])
        after = await handle_rounds(zombie, incoming(rounds[3:]))
        await phase_two(zombie, [m.value for m in after.messages])
        got = await stored_states(zombie, players_of(rounds))
        statuses = await zombie.store.round_statuses("L", [r.round_id for r in rounds])
        for ctx in (zombie, owner):
            await ctx.store.close()
        outcomes = [r.outcome for r in stale.results if r is not None]
        return got, outcomes, [r.outcome for r in fresh.results if r is not None], statuses.count("rated")

    got, zombie_outcomes, owner_outcomes, rated = asyncio.run(body())
    assert zombie_outcomes == ["fenced"] * 3, zombie_outcomes
    assert owner_outcomes == ["rated"] * 3, owner_outcomes
    assert rated == 4
    assert_equals_replay(rounds, got)


def test_the_sweeper_leaves_a_round_to_the_batch_holding_the_ladder(url_and_cluster: tuple[str, bool]) -> None:
    """A crashed worker left r1 registered (due for the sweeper). The redelivered batch [r2] holds
    the ladder's lease from its registration on; the worker's sweep, run while the batch waits
    there, leaves r1 alone (it used to complete it, racing the batch); the batch completes r1 under
    its lease, then rates r2. Redis equals the replay."""
    rounds = [game("r1", "L", ["a", "b"], 0), game("r2", "L", ["b", "c"], 1)]

    async def body() -> tuple[dict[tuple[str, str], tuple[float, float]], list[Any], list[str | None]]:
        ctx = worker(url_and_cluster)
        r1 = rounds[0]
        await ctx.store.register_batch([NewRound("L", "r1", r1.content_hash(), r1.occurred_at, 0.0, r1.field_size,
                                                 body=r1.to_json().encode(), due_at=0.0)], [])
        swept: list[Any] = []

        async def hook(place: str, **context: Any) -> bool:
            if place == faults.AFTER_REGISTER_BEFORE_FANOUT and not swept:
                swept.append(await sweep(ctx))
                swept.append(await ctx.store.round_statuses("L", ["r1"]))
            return False

        faults.install(hook)
        batch = await handle_rounds(ctx, incoming(rounds[1:]))
        faults.install(None)
        await phase_two(ctx, [m.value for m in batch.messages])
        got = await stored_states(ctx, players_of(rounds))
        statuses = await ctx.store.round_statuses("L", ["r1", "r2"])
        await ctx.store.close()
        return got, swept, statuses

    got, swept, statuses = asyncio.run(body())
    report, during = swept
    assert report.completed == [] and during == ["registered"], (report, during)
    assert statuses == ["rated", "rated"]
    assert_equals_replay(rounds, got)


def test_a_crashed_holder_s_lease_lapses_and_a_live_one_leaves_the_round_registered(
        url_and_cluster: tuple[str, bool]) -> None:
    """A crashed worker's lease (never renewed) lapses: the next batch waits for it and rates. A
    live holder that keeps the lease past the batch's wait: the batch's round is ``fenced``, left
    registered (in the sweeper's ledger, its body kept), and once the holder lets go the sweeper
    completes it. Redis equals the replay."""
    rounds = [game("r1", "L", ["a", "b"], 0), game("r2", "L", ["b", "c"], 1)]

    async def body() -> tuple[dict[tuple[str, str], tuple[float, float]], list[str], float, list[str | None]]:
        ctx = worker(url_and_cluster, sweep_timeout_s=0.5)
        # the crashed holder's lease lapses well within the batch's wait (up to LEASE_MS): under load
        # a lease lapsing at the end of that wait may be missed (then the round is fenced, not lost)
        await ctx.store.acquire_lease("L", "crashed", LEASE_MS // 4)
        started = time.monotonic()
        first = await handle_rounds(ctx, incoming(rounds[:1]))
        waited = time.monotonic() - started
        await phase_two(ctx, [m.value for m in first.messages])
        assert await ctx.store.acquire_lease("L", "alive", 60_000)
        second = await handle_rounds(ctx, incoming(rounds[1:]))
        assert second.messages == []
        left = await ctx.store.round_statuses("L", ["r2"])
        await ctx.store.release_leases(["L"], "alive")
        await asyncio.sleep(1.6)  # r2's sweep due time (rounded up to whole seconds) has passed
        report = await sweep(ctx)
        assert report.completed == [("L", "r2")], report
        got = await stored_states(ctx, players_of(rounds))
        await ctx.store.close()
        outcomes = [r.outcome for r in (*first.results, *second.results) if r is not None]
        return got, outcomes, waited, left

    got, outcomes, waited, left = asyncio.run(body())
    assert outcomes == ["rated", "fenced"], outcomes
    assert waited >= LEASE_MS / 1000 / 8, f"the batch rated at once ({waited:.3f}s) while the crashed lease held"
    assert left == ["registered"]
    assert_equals_replay(rounds, got)


def test_a_long_batch_renews_its_leases_and_drops_one_taken_meanwhile(redis_url: str) -> None:
    """``Leases.renew_if_due``: no Redis call before half the lease time; then each held lease is
    renewed with the same token, and one another owner took after it lapsed is dropped."""
    from stream.pipeline.lease import Leases
    from stream.store import keys

    async def body() -> None:
        ctx = context(redis_url)
        store = ctx.store
        leases = Leases("w1", LEASE_MS)
        assert await leases.take(store, ["A", "B"], 0.01) == {"A", "B"}
        tokens = dict(leases.tokens)
        await store.client.delete(keys.lease("A"))  # A lapsed: nobody took it
        leases.renewed_at = time.monotonic()  # just taken (the clock, not the load, decides)
        await leases.renew_if_due(store)  # too early: nothing asked
        assert await store.client.get(keys.lease("A")) is None
        await store.client.delete(keys.lease("B"))
        assert await store.acquire_lease("B", "w2", 60_000), "w2 takes B after w1's lapsed"
        leases.renewed_at -= LEASE_MS / 1000 * 0.6  # past half the lease time
        await leases.renew_if_due(store)
        assert leases.tokens == {"A": tokens["A"]}, leases.tokens
        assert await store.client.get(keys.lease("A")) == b"w1"
        await store.close()

    asyncio.run(body())
