"""The worker's copy of a pool against a real Redis: kept current by the changes its own calls
report (joins, cancels, commits), it equals the pool read in full after every call; another
writer's change or a pool lost (Redis emptied) makes the tick re-read in full."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stream.pipeline.matchmaking import MatchTopicNames, Matchmaker, _pool_copy
from stream.pipeline.mm_copies import PoolCopies
from stream.store.matchmaking import CommitMatch, MatchStore
from stream.store.store import Store

Q = "duel"
HOLD = 600.0
STEPS = st.lists(st.one_of(
    st.tuples(st.just("join"), st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=4)),
    st.tuples(st.just("cancel"), st.lists(st.sampled_from("abcdefghi"), min_size=1, max_size=3)),
    st.tuples(st.just("commit"), st.lists(st.sampled_from("abcdefghi"), min_size=2, max_size=2, unique=True))),
    max_size=12)


async def _apply(ms: MatchStore, copies: PoolCopies, ops: list[tuple[str, Any]], now: float) -> None:
    """As handle_tickets: one call, its joins and cancels handed to the copies."""
    copies.begin(Q)
    applied = await ms.apply(Q, ops, now=now, hold_s=HOLD)
    copies.applied(Q, applied.before, applied.after,
                   joins=[a for (k, a), o in zip(ops, applied.outcomes) if k == "join" and o.outcome == "new"],
                   removed=[a for (k, a), o in zip(ops, applied.outcomes) if k == "cancel" and o.outcome == "cancelled"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_the_copy_equals_the_pool_after_every_call(redis_url: str, steps: list) -> None:
    async def body() -> None:
        store = Store.from_url(redis_url, history_length=3)
        try:
            await store.client.flushall()
            ms = MatchStore(store)
            mm = Matchmaker(None, MatchTopicNames("m", "e", "d"), ms)  # type: ignore[arg-type]  # the copy's path only
            await _pool_copy(mm, Q, 0)
            joined = 0
            for i, (kind, ids) in enumerate(steps):
                now = 10.0 + i
                if kind == "join":
                    ops = [("join", (f"t{joined + k}{tid}", [tid], now, {"eu": 5.0} if tid == "a" else None))
                           for k, tid in enumerate(ids)]
                    joined += len(ids)
                    await _apply(ms, mm.copies, ops, now)
                elif kind == "cancel":
                    view = await ms.read_pool(Q)
                    assert view.tickets is not None
                    live = view.tickets.ticket_id.tolist()
                    await _apply(ms, mm.copies, [("cancel", live[ord(c) % len(live)] if live else c) for c in ids], now)
                else:
                    view = await ms.read_pool(Q)
                    assert view.tickets is not None
                    rows = view.tickets.rows()
                    if len(rows) >= 2:
                        (ta, pa, _), (tb, pb, _) = rows[0], rows[-1]
                        mid = f"m{i}"
                        commit = CommitMatch(mid, now, json.dumps({"teams": [list(pa), list(pb)]}), b"r", 0.5,
                                             [ta, tb], [1.0, 1.0], [*pa, *pb])
                        mm.copies.begin(Q)
                        done = await ms.commit(Q, [commit], [], now=now)
                        mm.copies.applied(Q, done.before, done.after, removed=[ta, tb] if done.matches else [])
                view = await ms.read_pool(Q)
                copy = await mm.copies.current(Q, view.version)
                assert copy is not None  # only this worker wrote: no full read needed
                copy.flush()
                cols, _ = copy.columns()
                assert view.tickets is not None
                assert sorted(zip(cols.ticket_id.tolist(), cols.created.tolist(), cols.players.tolist())) == \
                    [(t, s, p[0]) for t, p, s in view.tickets.rows()]
                assert (cols.latencies is None) == (view.tickets.latencies is None)
        finally:
            await store.close()
    asyncio.run(body())


def test_another_writer_or_a_lost_pool_means_a_full_read(redis_url: str) -> None:
    async def body() -> None:
        store = Store.from_url(redis_url, history_length=3)
        try:
            await store.client.flushall()
            ms = MatchStore(store)
            mm = Matchmaker(None, MatchTopicNames("m", "e", "d"), ms)  # type: ignore[arg-type]
            await _apply(ms, mm.copies, [("join", ("t1", ["ann"], 1.0, None))], 1.0)  # no copy yet: ignored
            first = await _pool_copy(mm, Q, (await ms.read_pool(Q, tickets=False)).version)
            assert first.tickets.ticket_id.tolist() == ["t1"]
            await ms.join(Q, [("t2", ["bob"], 2.0, None)], now=2.0, hold_s=HOLD)  # another writer
            version = (await ms.read_pool(Q, tickets=False)).version
            assert await mm.copies.current(Q, version) is None
            again = await _pool_copy(mm, Q, version)
            again.flush()
            assert sorted(again.columns()[0].ticket_id.tolist()) == ["t1", "t2"]
            await store.client.flushall()  # the pool lost: its version back to 0, behind the copy's
            assert await mm.copies.current(Q, (await ms.read_pool(Q, tickets=False)).version) is None
            mm.copies.drop(Q)  # a take-over: the next tick reads in full
            assert await mm.copies.current(Q, 0) is None
        finally:
            await store.close()
    asyncio.run(body())
