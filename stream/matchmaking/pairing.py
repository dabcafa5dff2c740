"""Matches of single players (duels, free-for-alls): neighbours in rating order, never all pairs.

The pool is sorted by rating (O(n log n)); a candidate match is a window of ``m`` consecutive
tickets, acceptable when its rating spread and quality are within the tolerance in force
(:func:`stream.matchmaking.tolerance.window_tolerance`). Duels choose pairs of adjacent tickets
run by run: a run of acceptable neighbours of even length pairs up as (1, 2), (3, 4), ... (the
pairing of least total gap on a line); of odd length, the newest ticket of the run sits out
(oldest tickets first). Larger lobbies take acceptable windows greedily from the bottom.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from stream.engine.predict import OutcomeModel

from .odds import lobby_odds
from .pool import Pool
from .queues import QueueConfig
from .tolerance import combine

Index = NDArray[np.int64]


def choose_pairs(ok: NDArray[np.bool_], created: NDArray[np.float64]) -> Index:
    """Left indices ``i`` of the chosen pairs (i, i+1) given ``ok[i]`` (pair i, i+1 acceptable)
    over ``len(ok) + 1`` sorted tickets of creation times ``created``; vectorised."""
    n = ok.size + 1
    if n < 2 or not ok.any():
        return np.zeros(0, dtype=np.int64)
    # Runs of tickets linked by acceptable edges: a run starts where the edge to its left is not ok.
    linked = np.concatenate(([False], ok))  # linked[j]: ticket j joins its left neighbour's run
    run = np.cumsum(~linked) - 1
    starts = np.flatnonzero(~linked)
    lengths = np.diff(np.append(starts, n))
    offset = np.arange(n) - starts[run]
    odd = (lengths % 2 == 1)[run]
    # In an odd run, the newest ticket at an even offset sits out (ties: the later one in order).
    candidate = odd & (offset % 2 == 0)
    key = np.where(candidate, created, -np.inf)
    order = np.lexsort((np.arange(n), key, run))  # by run, then creation time, then position
    last_of_run = np.flatnonzero(np.diff(np.append(run[order], -1)) != 0)
    out_pos = np.full(starts.size, -1, dtype=np.int64)
    chosen = order[last_of_run]
    out_pos[run[chosen]] = np.where(odd[chosen], offset[chosen], -1)
    skip = out_pos[run]  # offset of the ticket sitting out of this ticket's run, -1 if none
    left = np.where((skip >= 0) & (offset > skip), (offset - skip) % 2 == 1, offset % 2 == 0)
    left &= offset + 1 < lengths[run]
    left &= ~((skip >= 0) & (offset == skip))
    picked: Index = np.flatnonzero(left).astype(np.int64)
    return picked


def choose_windows(ok: NDArray[np.bool_], m: int) -> Index:
    """Starts of non-overlapping acceptable windows of ``m`` tickets, greedily from the bottom
    (the most windows a line admits); one step per acceptable window."""
    picked: list[int] = []
    free_from = 0
    for start in np.flatnonzero(ok).tolist():
        if start >= free_from:
            picked.append(start)
            free_from = start + m
    return np.asarray(picked, dtype=np.int64)


PAIR_BUDGET = 250_000
"""Player pairs whose odds a tick computes for every candidate window before choosing (beyond it,
large lobbies are chosen by rating spread first and checked for quality after)."""


def single_matches(queue: QueueConfig, pool: Pool, idx: Index,
                   model: OutcomeModel) -> tuple[Index, NDArray[np.float64], NDArray[np.float64]]:
    """The matches of single-player tickets ``idx``: tickets (k, m) in rating order, quality (k,),
    each one's mean P(ahead) of the others (k, m)."""
    m = queue.players
    if idx.size < m:
        return np.zeros((0, m), dtype=np.int64), np.zeros(0), np.zeros((0, m))
    idx = pool.by_rating(idx)
    rating, sigma = pool.rating[idx], pool.sigma[idx]
    windows = np.lib.stride_tricks.sliding_window_view(np.arange(idx.size), m)
    gap_w, q_w = combine(queue, pool.gap_tol[idx][windows], pool.q_tol[idx][windows], rating[m - 1:])
    ok = rating[m - 1:] - rating[: idx.size - m + 1] <= gap_w
    cand = np.flatnonzero(ok)
    if cand.size * m * (m - 1) // 2 <= PAIR_BUDGET:
        quality, beats = lobby_odds(rating[windows[cand]], sigma[windows[cand]], model)
        ok[:] = False
        ok[cand[quality >= q_w[cand]]] = True
        starts = choose_pairs(ok, pool.created[idx]) if m == 2 else choose_windows(ok, m)
        where = np.searchsorted(cand, starts)
        quality, beats = quality[where], beats[where]
    else:
        starts = choose_windows(ok, m)
        quality, beats = lobby_odds(rating[windows[starts]], sigma[windows[starts]], model)
        good = quality >= q_w[starts]
        starts, quality, beats = starts[good], quality[good], beats[good]
    return idx[windows[starts]], quality, beats
