"""The tolerance in force: per ticket from its wait (the queue's widening schedule, wider for a
provisional ticket), per match from its tickets (the most lenient ticket's: the longest waiting
one widens the search for the match, as FlexMatch's expansions with the oldest ticket's age,
seed 003's "expand the search"), then the top-of-ladder floor."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .queues import QueueConfig, Tolerance

Array = NDArray[np.float64]


def ticket_tolerances(queue: QueueConfig, waits: Array, max_sigma: Array) -> tuple[Array, Array]:
    """(max_gap, min_quality) of each ticket after ``waits`` seconds; ``max_sigma`` is the largest
    sigma among its players (provisional at >= ``queue.provisional_sigma``)."""
    after = np.array([s.after_s for s in queue.widening])
    step = np.searchsorted(after, waits, side="right") - 1
    gap = np.array([s.max_gap for s in queue.widening])[np.maximum(step, 0)]
    quality = np.array([s.min_quality for s in queue.widening])[np.maximum(step, 0)]
    gap = np.where(max_sigma >= queue.provisional_sigma, gap * queue.provisional_gap_factor, gap)
    return gap, quality


def at_top(queue: QueueConfig, top_rating: Array) -> NDArray[np.bool_]:
    """Whether a match whose best ticket is rated ``top_rating`` falls under the top floor."""
    if queue.top_rating is None:
        return np.zeros(np.shape(top_rating), dtype=bool)
    return np.asarray(top_rating) >= queue.top_rating


def combine(queue: QueueConfig, gaps: Array, qualities: Array, top_rating: Array) -> tuple[Array, Array]:
    """The tolerance of matches from their tickets' (arrays (k, tickets), padded with -inf gap /
    +inf quality): the most lenient ticket's, capped by the top floor when it applies."""
    gap = gaps.max(axis=-1)
    quality = qualities.min(axis=-1)
    top = at_top(queue, top_rating)
    gap = np.where(top, np.minimum(gap, queue.top_max_gap), gap)
    quality = np.where(top, np.maximum(quality, queue.top_min_quality), quality)
    return gap, quality


def match_tolerance(queue: QueueConfig, waits: list[float], max_sigmas: list[float], ratings: list[float]) -> Tolerance:
    """The tolerance in force for one match of tickets (their waits, largest sigmas, ratings)."""
    gap, quality = ticket_tolerances(queue, np.asarray(waits, dtype=float), np.asarray(max_sigmas, dtype=float))
    g, q = combine(queue, gap[None, :], quality[None, :], np.array([max(ratings)]))
    return Tolerance(float(g[0]), float(q[0]))
