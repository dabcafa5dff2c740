"""The bonus pool of seed 003 (StarCraft II's ladder): display points that accrue with time and
double gains until spent, "only used to increase the displayed rating for division ranking
purposes and ignored in back-end calculation".

A player's pool starts empty at the season's start and grows by ``per_day`` points a day up to
``cap`` (time accrues whether he plays or not); at each of his rounds, a positive change ``d`` of
his displayed rating takes ``min(d, pool)`` from the pool as bonus points (the gain doubled while
the pool lasts). His points are his display rating plus every bonus point he took this season.
Nothing here feeds the rating maths: it is read off the rounds' display ratings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

DAY_S = 86_400.0


@dataclass(frozen=True, slots=True)
class BonusPool:
    """Accrual rate (points a day) and cap of a season's bonus pool."""

    per_day: float
    cap: float

    def __post_init__(self) -> None:
        for name in ("per_day", "cap"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise ValueError(f"bonus_{name} must be a finite number >= 0, got {value!r}")


@dataclass(frozen=True, slots=True)
class Bonus:
    """A player's bonus over his rounds of a season: ``taken[k]`` points at round k, the pool left
    right after it (``pool_after``) and now (``pool_now``), and every point taken (``total``)."""

    taken: np.ndarray
    pool_after: np.ndarray
    pool_now: float
    total: float


def bonus(start: float, times: np.ndarray, deltas: np.ndarray, pool: BonusPool, now: float) -> Bonus:
    """The bonus of a player whose rounds of the season (started at ``start``) were at ``times``
    (ascending) with display-rating changes ``deltas`` (module docstring)."""
    n = len(times)
    taken = np.zeros(n)
    after = np.zeros(n)
    left, last = 0.0, start
    for k in range(n):  # one player's rounds of a season: sequential by definition (the pool carries)
        t = float(times[k])
        left = min(pool.cap, left + pool.per_day * max(t - last, 0.0) / DAY_S)
        last = t
        gain = float(deltas[k])
        if gain > 0:
            taken[k] = min(gain, left)
            left -= taken[k]
        after[k] = left
    now_left = min(pool.cap, left + pool.per_day * max(now - last, 0.0) / DAY_S)
    return Bonus(taken, after, now_left, float(taken.sum()))
