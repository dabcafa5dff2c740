"""choose_pairs (vectorised) equals choosing run by run in plain Python; choose_windows never
overlaps and takes as many windows as a line admits."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.matchmaking.pairing import choose_pairs, choose_windows


def _reference(ok: list[bool], created: list[float]) -> list[int]:
    """Run by run: pair from the bottom; in an odd run, the newest ticket at an even offset sits
    out (ties: the later one)."""
    n = len(ok) + 1
    picked, start = [], 0
    while start < n:
        end = start
        while end < n - 1 and ok[end]:
            end += 1
        run = list(range(start, end + 1))
        skip = None
        if len(run) % 2 == 1:
            skip = max(run[0::2], key=lambda i: (created[i], i))
        rest = [i for i in run if i != skip]
        picked += [rest[k] for k in range(0, len(rest) - 1, 2)]
        start = end + 1
    return picked


@settings(max_examples=400, deadline=None)
@given(st.lists(st.booleans(), max_size=40), st.data())
def test_choose_pairs_equals_the_run_by_run_reference(ok: list[bool], data: st.DataObject) -> None:
    created = data.draw(st.lists(st.integers(0, 5).map(float), min_size=len(ok) + 1, max_size=len(ok) + 1))
    got = choose_pairs(np.array(ok, dtype=bool), np.array(created)).tolist()
    assert got == _reference(ok, created)  # left tickets of the pairs (i, i + 1), in order
    assert all(ok[i] for i in got)
    flat = [t for i in got for t in (i, i + 1)]
    assert len(flat) == len(set(flat))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.booleans(), max_size=60), st.integers(2, 6))
def test_choose_windows_greedy(ok: list[bool], m: int) -> None:
    starts = choose_windows(np.array(ok, dtype=bool), m).tolist()
    assert all(ok[s] for s in starts)
    assert all(b - a >= m for a, b in zip(starts, starts[1:]))
    best, free = 0, 0  # the most non-overlapping windows: greedy from the bottom is optimal
    for s, good in enumerate(ok):
        if good and s >= free:
            best, free = best + 1, s + m
    assert len(starts) == best
