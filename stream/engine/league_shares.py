"""League thresholds as target shares of the active players (seed 003; StarCraft II's ladder:
e.g. Bronze 8 %, Silver 20 %, Gold 24 %, Platinum 24 %, Diamond 20 %, Master 4 %, Grandmaster the
top 200).

Given the players' scores (the display rating: in conservative mode ``mu - k*sigma``, the lower
bound the confident promotion rule compares with a threshold), the thresholds are cut from the
distribution itself: the ``n`` players sorted ascending, league ``i`` starts at rank
``round(n * (s_0 + ... + s_{i-1}))`` and its threshold is that player's score, so each league
holds its share to within one player per boundary (players tied at a boundary all go up: ties
aside). With ``top`` the last league is the best ``top`` players (taken out of the league below it).
A player's league is then the highest whose threshold his score reaches (:func:`league_of`).

Pure maths; the store keeps every threshold set with the time it took effect
(``stream.store.seasons``), so history shows what a player saw when he saw it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

SHARES_TOLERANCE = 1e-6
"""How far from 1 the shares may sum (they are given as rounded percentages)."""


@dataclass(frozen=True, slots=True)
class LeagueShares:
    """Target shares of the leagues, lowest first (one per league, or one per league but the top
    one when ``top`` gives the top league as the best ``top`` players)."""

    shares: tuple[float, ...]
    top: int | None = None

    def __post_init__(self) -> None:
        if not self.shares or any(not (0.0 <= s <= 1.0) or math.isnan(s) for s in self.shares):
            raise ValueError("shares must be numbers in [0, 1], one per league")
        if abs(sum(self.shares) - 1.0) > SHARES_TOLERANCE:
            raise ValueError(f"shares must sum to 1, got {sum(self.shares):g}")
        if self.top is not None and (isinstance(self.top, bool) or not isinstance(self.top, int) or self.top < 1):
            raise ValueError(f"top must be an integer >= 1 or null, got {self.top!r}")

    @property
    def leagues(self) -> int:
        """How many leagues the shares describe."""
        return len(self.shares) + (self.top is not None)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> LeagueShares:
        """From ``{"shares": [...], "top": N}`` (``top`` optional)."""
        shares = raw.get("shares")
        if not isinstance(shares, list) or any(isinstance(s, bool) or not isinstance(s, (int, float)) for s in shares):
            raise ValueError("shares: must be a list of numbers, one per league, lowest first")
        top = raw.get("top")
        if isinstance(top, float) and top.is_integer():
            top = int(top)
        return cls(tuple(float(s) for s in shares), top)


def boundary_ranks(n: int, spec: LeagueShares) -> np.ndarray:
    """Ascending rank (0-based) of the lowest player of each league above the first: league i
    (i >= 1) holds ranks ``[b_{i-1}, b_i)`` with ``b`` these ranks and ``n`` at the end."""
    cumulative = np.cumsum(np.asarray(spec.shares[:-1], dtype=np.float64))
    ranks = np.minimum(np.rint(n * cumulative).astype(np.int64), n)
    if spec.top is not None:  # the best ``top`` players, out of whichever leagues they would be in
        first_top = max(n - spec.top, 0)
        ranks = np.append(np.minimum(ranks, first_top), first_top)
    return ranks


def thresholds_from(scores_at_boundaries: Sequence[float], n: int, spec: LeagueShares) -> np.ndarray:
    """Each league's threshold (the first -inf) from the scores of the players at
    :func:`boundary_ranks`; a league no player reaches (its boundary at ``n``) is +inf."""
    ranks = boundary_ranks(n, spec)
    out = np.full(spec.leagues, -np.inf)
    scores = np.asarray(scores_at_boundaries, dtype=np.float64)
    out[1:] = np.where(ranks < n, scores, np.inf)
    return out


def league_of(scores: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """The league index of each score: the highest whose threshold it reaches."""
    return np.searchsorted(np.asarray(thresholds, dtype=np.float64), np.asarray(scores, dtype=np.float64),
                           side="right") - 1
