"""The matchmaking pool in a real Redis (single server and a real Cluster): joins idempotent on the
ticket id, one live ticket per player and queue, cancels honoured while waiting and "too late"
after, a tick's commit all-or-nothing per match, timeouts, the outbox, the release of players."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import TypeVar

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.asyncio.cluster import RedisCluster

from stream.store import keys
from stream.store.matchmaking import CommitMatch, CommitTimeout, MatchStore, queue_state, ticket_status
from stream.store.store import Store

T = TypeVar("T")
Q = "duel"
HOLD = 600.0


@pytest.fixture(params=["single", "real-cluster"])
def url(request: pytest.FixtureRequest) -> tuple[str, bool]:
    if request.param == "real-cluster":
        return request.getfixturevalue("redis_cluster_url"), True
    return request.getfixturevalue("redis_url"), False


def run(url: tuple[str, bool], body: Callable[[MatchStore], Awaitable[T]]) -> T:
    async def main() -> T:
        client = RedisCluster.from_url(url[0]) if url[1] else None
        store = Store(client, history_length=3) if client is not None else Store.from_url(url[0], history_length=3)
        try:
            return await body(MatchStore(store))
        finally:
            await store.close()
    return asyncio.run(main())


def match(mid: str, tickets: list[str], players: list[str], *, formed: float = 10.0) -> CommitMatch:
    body = json.dumps({"match_id": mid, "teams": [[p] for p in players]})
    return CommitMatch(mid, formed, body, f"records of {mid}".encode(), 0.5, tickets, [1.0] * len(tickets), players)


def test_join_is_idempotent_and_one_live_ticket_per_player(url: tuple[str, bool]) -> None:
    async def body(ms: MatchStore) -> None:
        first = await ms.join(Q, [("t1", ["ann"], 1.0, None), ("t1", ["ann"], 1.0, None),
                                  ("t2", ["bob", "ann"], 2.0, {"eu": 20.0}), ("t3", ["bob"], 3.0, None)], now=5.0,
                              hold_s=HOLD)
        assert [o.outcome for o in first] == ["new", "duplicate", "rejected", "new"]
        assert first[2].reason == "waiting" and first[2].player == "ann"
        again = await ms.join(Q, [("t2", ["bob"], 2.0, None)], now=6.0, hold_s=HOLD)
        assert again[0].outcome == "duplicate" and again[0].status["status"] == "rejected"  # stays rejected
        view = await ms.read_pool(Q)
        assert [(t, p) for t, p, _ in view.tickets.rows()] == [("t1", ("ann",)), ("t3", ("bob",))]
        assert view.tickets.rows()[0][2] == 1.0
    run(url, body)


def test_the_pool_reads_as_columns_aligned_ticket_by_ticket(url: tuple[str, bool]) -> None:
    """read_pool's columns: each ticket's id, since, latencies and party (its players in order, the
    flat players column cut by the sizes) stay together, whatever order Redis returns them in."""
    joined = [("solo", ["ann"], 1.5, None), ("duo", ["cid", "bob"], 2.5, {"eu": 20.0}),
              ("trio", ["eve", "dan", "fay"], 0.5, {"us": 7.0, "eu": 90.0})]

    async def body(ms: MatchStore) -> None:
        await ms.join(Q, joined, now=5.0, hold_s=HOLD)
        cols = (await ms.read_pool(Q)).tickets
        assert len(cols) == 3 and int(cols.size.sum()) == cols.players.size == 6
        ends = np.cumsum(cols.size).tolist()
        got = {tid: (cols.players[e - s:e].tolist(), since, lat)
               for tid, s, e, since, lat in zip(cols.ticket_id.tolist(), cols.size.tolist(), ends, cols.created.tolist(),
                                                cols.latencies or [None] * 3)}
        assert got == {tid: (players, since, lat) for tid, players, since, lat in joined}
        await ms.cancel(Q, ["duo", "trio"], now=6.0)
        assert (await ms.read_pool(Q)).tickets.latencies is None  # no waiting ticket has latencies
    run(url, body)


def test_cancel_before_a_tick_is_honoured_after_it_is_too_late(url: tuple[str, bool]) -> None:
    async def body(ms: MatchStore) -> None:
        await ms.join(Q, [("a", ["ann"], 0.0, None), ("b", ["bob"], 0.0, None), ("c", ["cid"], 0.0, None)],
                      now=1.0, hold_s=HOLD)
        (cancel,) = await ms.cancel(Q, ["c"], now=2.0)
        assert cancel.outcome == "cancelled" and cancel.status["wait"] == 2.0
        done = await ms.commit(Q, [match("m1", ["a", "b"], ["ann", "bob"])], [], now=3.0)
        assert done.matches == ["m1"]
        late = await ms.cancel(Q, ["a"], now=4.0)
        assert late[0].outcome == "too_late" and late[0].status["status"] == "matched"
        assert late[0].status["match_id"] == "m1"
        again = await ms.cancel(Q, ["c"], now=4.0)
        assert again[0].outcome == "too_late" and again[0].status["status"] == "cancelled"
        # cid may queue again (his ticket was cancelled); the matched players are in match
        out = await ms.join(Q, [("c2", ["cid"], 5.0, None), ("a2", ["ann"], 5.0, None)], now=5.0, hold_s=HOLD)
        assert [o.outcome for o in out] == ["new", "rejected"] and out[1].reason == "in_match"
    run(url, body)


def test_cancel_of_an_unknown_ticket_makes_its_late_join_a_no_op(url: tuple[str, bool]) -> None:
    async def body(ms: MatchStore) -> None:
        (cancel,) = await ms.cancel(Q, ["x"], now=1.0)
        assert cancel.outcome == "cancelled"
        (join,) = await ms.join(Q, [("x", ["ann"], 1.0, None)], now=2.0, hold_s=HOLD)
        assert join.outcome == "duplicate" and join.status["status"] == "cancelled"
        assert (await ms.read_pool(Q)).tickets.rows() == []
    run(url, body)


def test_commit_drops_a_match_whose_ticket_left_and_never_records_a_match_twice(url: tuple[str, bool]) -> None:
    async def body(ms: MatchStore) -> None:
        await ms.join(Q, [(t, [t.upper()], 0.0, None) for t in "abcd"], now=1.0, hold_s=HOLD)
        await ms.cancel(Q, ["b"], now=1.5)  # between the tick's read and its commit
        done = await ms.commit(Q, [match("m1", ["a", "b"], ["A", "B"]), match("m2", ["c", "d"], ["C", "D"])], [],
                               now=2.0)
        assert done.matches == ["m2"]
        replay = await ms.commit(Q, [match("m2", ["c", "d"], ["C", "D"])], [], now=2.5)  # a replayed tick
        assert replay.matches == []
        view = await ms.read_pool(Q)
        assert [t for t, _, _ in view.tickets.rows()] == ["a"]  # a waits for the next tick
        assert view.live == ["m2"] and set(view.outbox) == {"m2"}
        await ms.sent(Q, ["m2"])
        assert (await ms.read_pool(Q)).outbox == {}
    run(url, body)


def test_timeouts_leave_the_pool_with_their_records(url: tuple[str, bool]) -> None:
    async def body(ms: MatchStore) -> None:
        await ms.join(Q, [("a", ["ann"], 0.0, None), ("b", ["bob"], 0.0, None)], now=1.0, hold_s=HOLD)
        await ms.cancel(Q, ["b"], now=2.0)
        done = await ms.commit(Q, [], [CommitTimeout("a", 30.0, b"ta"), CommitTimeout("b", 30.0, b"tb")], now=30.0)
        assert done.timed_out == ["a"]  # b was cancelled first: not timed out
        view = await ms.read_pool(Q)
        assert view.tickets.rows() == [] and view.outbox == {"t:a": b"ta"}
        (again,) = await ms.join(Q, [("a3", ["ann"], 31.0, None)], now=31.0, hold_s=HOLD)
        assert again.outcome == "new"
        (late,) = await ms.cancel(Q, ["a"], now=32.0)
        assert late.outcome == "too_late" and late.status["status"] == "timed_out"
    run(url, body)


def test_release_after_the_round_is_rated_or_the_hold_expired(url: tuple[str, bool]) -> None:
    async def body(ms: MatchStore) -> None:
        await ms.join(Q, [(t, [t.upper()], 0.0, None) for t in "abcd"], now=1.0, hold_s=HOLD)
        await ms.commit(Q, [match("m1", ["a", "b"], ["A", "B"], formed=2.0),
                            match("m2", ["c", "d"], ["C", "D"], formed=2.0)], [], now=2.0)
        rated, expired = await ms.release(Q, ["m1", "zz"], now=3.0, hold_s=HOLD)
        assert (rated, expired) == (["m1"], [])
        out = await ms.join(Q, [("a2", ["A"], 4.0, None), ("c2", ["C"], 4.0, None)], now=4.0, hold_s=HOLD)
        assert [o.outcome for o in out] == ["new", "rejected"]
        rated, expired = await ms.release(Q, [], now=2.0 + HOLD, hold_s=HOLD)
        assert (rated, expired) == ([], ["m2"])
        (c3,) = await ms.join(Q, [("c3", ["C"], 4.0, None)], now=2.0 + HOLD, hold_s=HOLD)
        assert c3.outcome == "new"
        assert await ms.release(Q, ["m1"], now=5.0, hold_s=HOLD) == ([], [])  # idempotent
    run(url, body)


def test_reads_for_the_api(url: tuple[str, bool]) -> None:
    async def body(ms: MatchStore) -> None:
        await ms.join(Q, [(t, [t.upper()], 0.0, None) for t in "abc"], now=1.0, hold_s=HOLD)
        await ms.commit(Q, [match("m1", ["a", "b"], ["A", "B"], formed=2.0)], [], now=2.0)
        state = await queue_state(ms.store.client, Q)
        assert (state.tickets_waiting, state.players_waiting, state.in_match, state.unsent) == (1, 1, 1, 1)
        assert state.recent == [(2.0, 0.5, 1.0)] and state.waits == [(2.0, 1.0), (2.0, 1.0)]
        status = await ticket_status(ms.store.client, Q, "c")
        assert status is not None and status["status"] == "searching" and status["since"] == 0.0
        assert (await ticket_status(ms.store.client, Q, "a") or {})["match_id"] == "m1"
        assert await ticket_status(ms.store.client, Q, "nope") is None
        assert keys.mm_pool(Q).endswith("{q:duel}")
    run(url, body)


def test_ratings_of_players_nan_for_unknown(url: tuple[str, bool]) -> None:
    async def body(ms: MatchStore) -> None:
        await ms.store.client.hset(keys.player("lad", "ann"), mapping={"mu": "1510.5", "sigma": "90.25",
                                                                       "last_time": "1700000000.5"})
        mu, sigma, last_time = await ms.ratings("lad", ["ann", "bob"])
        assert mu[0] == 1510.5 and sigma[0] == 90.25 and last_time[0] == 1700000000.5
        assert mu[1] != mu[1] and last_time[1] != last_time[1]
    run(url, body)


OPS = st.lists(st.one_of(
    st.tuples(st.just("join"), st.sampled_from("abcdef"), st.lists(st.sampled_from("PQRSTU"), min_size=1, max_size=2,
                                                                    unique=True)),
    st.tuples(st.just("cancel"), st.sampled_from("abcdefg"), st.just([]))), max_size=25)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_a_batch_of_joins_and_cancels_equals_applying_them_one_by_one(redis_url: str, ops: list) -> None:
    """One round trip of ops in order has the outcomes and leaves the pool that one call per op does."""
    def as_ops(queue_ops: list) -> list:
        return [("join", (tid, players, 1.0, None)) if kind == "join" else ("cancel", tid)
                for kind, tid, players in queue_ops]

    async def body(ms: MatchStore) -> None:
        await ms.store.client.flushall()
        batch = (await ms.apply("batched", as_ops(ops), now=2.0, hold_s=HOLD)).outcomes
        single = [o for op in as_ops(ops) for o in (await ms.apply("single", [op], now=2.0, hold_s=HOLD)).outcomes]
        assert [(o.outcome, o.status, o.reason) for o in batch] == [(o.outcome, o.status, o.reason) for o in single]
        assert (await ms.read_pool("batched")).tickets.rows() == (await ms.read_pool("single")).tickets.rows()
        players = [p for _, party, _ in (await ms.read_pool("batched")).tickets.rows() for p in party]
        assert len(players) == len(set(players))  # one live ticket per player
    run((redis_url, False), body)


def test_a_commit_of_many_matches_records_what_committing_them_one_by_one_does(url: tuple[str, bool]) -> None:
    """mm_commit.lua checks every match, then writes each key in chunks: the same state as one
    commit per match, across chunk boundaries, with a match reusing a ticket taken earlier in the
    same commit and a match id twice."""
    n = 2_100  # 4,200 tickets: 8,400 status values, more than one chunk
    tickets = [f"t{i}" for i in range(2 * n + 1)]
    matches = [match(f"m{i}", [tickets[2 * i], tickets[2 * i + 1]], [tickets[2 * i].upper(), tickets[2 * i + 1].upper()],
                     formed=2.0) for i in range(n)]
    matches.insert(7, match("reuses", ["t3", tickets[-1]], ["T3", tickets[-1].upper()], formed=2.0))
    matches.append(match("m5", ["t10", "t11"], ["T10", "T11"], formed=2.0))  # m5 again
    together, one_by_one = "all", "each"

    async def body(ms: MatchStore) -> None:
        for q in (together, one_by_one):
            await ms.join(q, [(t, [t.upper()], 0.0, None) for t in tickets], now=1.0, hold_s=HOLD)
        done = await ms.commit(together, matches, [], now=2.0)
        each = [m for c in matches for m in (await ms.commit(one_by_one, [c], [], now=2.0)).matches]
        assert done.matches == each == [f"m{i}" for i in range(n)]
        assert done.after == done.before + 1
        a, b = await ms.read_pool(together), await ms.read_pool(one_by_one)
        assert a.tickets.rows() == b.tickets.rows() == [(tickets[-1], (tickets[-1].upper(),), 0.0)]
        assert sorted(a.live) == sorted(b.live) and a.outbox == b.outbox and len(a.outbox) == n
        client = ms.store.client
        assert await queue_state(client, together) == await queue_state(client, one_by_one)
        for t in tickets[:8] + tickets[-3:]:
            assert await ticket_status(client, together, t) == await ticket_status(client, one_by_one, t)
    run(url, body)
