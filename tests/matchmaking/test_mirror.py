"""The worker's copy of a pool (PoolMirror): joins, cancels and removals applied as deltas equal the
pool built from scratch; ratings read when a ticket enters and round robin after; the tick's order
of tickets sharing a creation time."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.matchmaking.mirror import PoolMirror
from stream.matchmaking.tick import _order
from stream.matchmaking.tickets import TicketColumns

OPS = st.lists(st.lists(st.one_of(
    st.tuples(st.just("join"), st.sampled_from("abcdefghij"), st.integers(1, 3), st.sampled_from([1.0, 2.0, 3.0]),
              st.booleans()),
    st.tuples(st.just("remove"), st.sampled_from("abcdefghijk"), st.just(0), st.just(0.0), st.just(False))),
    max_size=8), max_size=12)


def _rows(cols: TicketColumns) -> list[tuple[str, tuple[str, ...], float, object]]:
    flat, start = cols.players.tolist(), cols.start.tolist()
    lat = cols.latencies or (None,) * len(cols)
    return sorted((t, tuple(flat[start[i]:start[i + 1]]), float(cols.created[i]), lat[i])
                  for i, t in enumerate(cols.ticket_id.tolist()))


@settings(max_examples=200, deadline=None)
@given(batches=OPS, flush_every=st.integers(1, 3))
def test_deltas_equal_the_pool_built_one_by_one(batches: list, flush_every: int) -> None:
    """Each batch applied as a delta (its joins, then its removals: a ticket id joins once at most, so
    a batch's removal of it follows its join; flushing now and then, as ticks do) leaves the copy's live
    tickets equal to a dict of the pool updated op by op, and every player's rating is read once
    his ticket entered."""
    copy = PoolMirror.load(0, TicketColumns.of([], {}))
    truth: dict[str, tuple[tuple[str, ...], float, object]] = {}
    used: set[str] = set()  # a ticket id joins once at most (the store's idempotency ledger)
    for b, batch in enumerate(batches):
        joins, removed = [], []
        for kind, tid, size, since, lat in batch:
            if kind == "join" and tid not in used:
                used.add(tid)
                party = tuple(f"{tid}{k}" for k in range(size))
                latencies = {"eu": 10.0} if lat else None
                truth[tid] = (party, since, latencies)
                joins.append((tid, party, since, latencies))
            elif kind == "remove" and tid in truth:
                del truth[tid]
                removed.append(tid)
        copy.delta(joins, removed, b + 1)
        assert copy.version == b + 1 and len(copy) == len(truth)
        if b % flush_every == 0:
            copy.flush()
            stale = copy.stale_players(4)
            copy.set_ratings(stale, np.full(stale.size, 1500.0), np.full(stale.size, 100.0), np.full(stale.size, 0.0))
            cols, last_time = copy.columns()
            assert _rows(cols) == sorted((t, p, s, lat) for t, (p, s, lat) in truth.items())
            assert not np.isnan(cols.mu).any() and last_time.size == cols.players.size
            assert (cols.latencies is None) == all(lat is None for _, _, lat in truth.values())


def test_ratings_are_refreshed_round_robin() -> None:
    """New players are read at once; the others ``refresh`` per tick, all within ceil(n / refresh) ticks."""
    n = 10
    ids = np.array([f"t{i}" for i in range(n)], dtype=object)
    copy = PoolMirror.load(3, TicketColumns(ids, np.ones(n, dtype=np.int64), ids.copy(), np.arange(n, dtype=float),
                                            np.full(n, np.nan), np.full(n, np.nan)))
    assert copy.stale_players(4).tolist() == list(range(n))  # never read: all of them
    copy.set_ratings(np.arange(n), np.zeros(n), np.zeros(n), np.zeros(n))
    seen: list[int] = []
    for _ in range(3):
        turn = copy.stale_players(4)
        assert turn.size == 4
        seen += turn.tolist()
    assert set(seen) == set(range(n))
    copy.delta([("new", ["p"], 1.0, None)], ["t0"], 4)
    copy.flush()
    turn = copy.stale_players(4)
    assert int(np.flatnonzero(copy.tickets.players == "p")[0]) in turn.tolist()  # the new player, besides the slice of 4
    assert 0 not in turn.tolist() or copy.alive[0]  # a removed ticket's player is not read


@settings(max_examples=200, deadline=None)
@given(created=st.lists(st.sampled_from([1.0, 2.0, 3.0, 4.5]), max_size=30), seed=st.integers(0, 1000))
def test_order_by_creation_then_id_equals_the_full_sort(created: list[float], seed: int) -> None:
    ids = np.array([f"t{i}" for i in np.random.default_rng(seed).permutation(len(created))], dtype=object)
    cols = TicketColumns(ids, np.ones(len(created), dtype=np.int64), ids.copy(), np.array(created, dtype=float),
                         np.zeros(len(created)), np.zeros(len(created)))
    assert _order(cols).tolist() == np.lexsort((ids.astype(str), np.array(created, dtype=float))).tolist()



@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(1, 3), st.sampled_from([1.0, 2.0, 3.0, 0.5]), st.booleans()), max_size=20))
def test_a_full_read_loads_in_creation_order_with_every_party_intact(rows: list) -> None:
    ids = np.array([f"t{i}" for i in range(len(rows))], dtype=object)
    size = np.array([s for s, _, _ in rows], dtype=np.int64)
    players = np.array([f"t{i}p{k}" for i, (s, _, _) in enumerate(rows) for k in range(s)], dtype=object)
    since = np.array([t for _, t, _ in rows], dtype=float)
    latencies = [{"eu": 1.0} if lat else None for _, _, lat in rows]
    nan = np.full(players.size, np.nan)
    copy = PoolMirror.load(7, TicketColumns(ids, size, players, since, nan, nan.copy(),
                                            tuple(latencies) if any(latencies) else None))
    cols, _ = copy.columns()
    assert (np.diff(cols.created) >= 0).all() and copy.version == 7
    want = sorted((f"t{i}", tuple(f"t{i}p{k}" for k in range(s)), t, {"eu": 1.0} if lat else None)
                  for i, (s, t, lat) in enumerate(rows))
    assert _rows(cols) == want
