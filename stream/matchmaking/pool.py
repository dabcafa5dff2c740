"""A tick's view of the waiting tickets: arrays of their ratings, waits and tolerances, and the
region buckets the tick forms matches in."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

import numpy as np
from numpy.typing import NDArray

from .queues import QueueConfig
from .tickets import TicketColumns
from .tolerance import ticket_tolerances

Array = NDArray[np.float64]


@dataclass(frozen=True)
class Pool:
    """The live tickets (in (created_at, ticket_id) order) as arrays: a party's rating is its mean
    member's mu, its sigma ``sqrt(mean sigma^2)`` (``stream.engine.teams.team_beliefs``)."""

    rating: Array
    sigma: Array
    max_sigma: Array
    wait: Array
    created: Array
    size: NDArray[np.int64]
    gap_tol: Array
    q_tol: Array

    def take(self, idx: NDArray[np.int64]) -> "Pool":
        """The pool of tickets ``idx``, in that order."""
        return Pool(*(getattr(self, f.name)[idx] for f in fields(self)))

    def by_rating(self, idx: NDArray[np.int64]) -> NDArray[np.int64]:
        """``idx`` sorted by rating, then creation time, then position: deterministic."""
        out: NDArray[np.int64] = idx[np.lexsort((idx, self.created[idx], self.rating[idx]))]
        return out


def build_pool(queue: QueueConfig, waiting: TicketColumns, now: float, noob: tuple[float, float]) -> Pool:
    """The arrays of ``waiting`` (in its order); a player without a rating is a newcomer ``noob``
    (mu, sigma)."""
    n = len(waiting)
    size = waiting.size
    new = np.isnan(waiting.mu) | np.isnan(waiting.sigma)
    mu, sig = np.where(new, noob[0], waiting.mu), np.where(new, noob[1], waiting.sigma)
    owner = np.repeat(np.arange(n), size)
    rating = np.bincount(owner, weights=mu, minlength=n) / np.maximum(size, 1)
    sigma = np.sqrt(np.bincount(owner, weights=sig**2, minlength=n) / np.maximum(size, 1))
    max_sigma = np.maximum.reduceat(sig, waiting.start[:-1]) if n else np.zeros(0)
    wait = np.maximum(now - waiting.created, 0.0)
    gap_tol, q_tol = ticket_tolerances(queue, wait, max_sigma)
    return Pool(rating, sigma, max_sigma, wait, waiting.created, size, gap_tol, q_tol)


def region_passes(queue: QueueConfig, latencies: Sequence[Mapping[str, float] | None] | None,
                  n: int) -> list[tuple[str | None, NDArray[np.int64]]]:
    """The buckets a tick forms matches in, in order: without a region rule the whole pool; with
    one, the tickets by best region (least latency within ``max_latency_ms``; tickets without
    latencies together), then each region with every leftover ticket that reaches it (or has no
    latencies). A ticket reaching no region waits (and times out)."""
    everyone = np.arange(n, dtype=np.int64)
    limit = queue.max_latency_ms
    if limit is None:
        return [(None, everyone)]
    reach: list[set[str] | None] = []
    best: list[str | None] = []
    for lat in latencies or (None,) * n:
        if not lat:
            reach.append(None)
            best.append(None)
            continue
        ok = {r: ms for r, ms in lat.items() if ms <= limit}
        reach.append(set(ok))
        best.append(min(ok, key=lambda r: (ok[r], r)) if ok else "")
    out: list[tuple[str | None, NDArray[np.int64]]] = []
    for region in sorted({b for b in best if b}):
        out.append((region, np.array([i for i, b in enumerate(best) if b == region], dtype=np.int64)))
    out.append((None, np.array([i for i, b in enumerate(best) if b is None], dtype=np.int64)))
    for region in sorted({r for s in reach if s for r in s}):
        out.append((region, np.array([i for i, s in enumerate(reach) if s is None or region in s], dtype=np.int64)))
    return out
