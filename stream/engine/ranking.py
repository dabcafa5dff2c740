"""Standings as tie groups: the structure phase one works on."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class OutcomeFree(ValueError):
    """Fewer than 2 players, or a draw not rated (``draws_rate`` False): recorded and skipped."""


@dataclass(frozen=True, slots=True)
class TieGroups:
    """Players sorted by rank (best first) in tie groups: ``order[k]`` the input index of the k-th
    best, group g at sorted positions ``start[g] : start[g] + size[g]``, ``group_of[i]`` player i's."""

    order: np.ndarray
    start: np.ndarray
    size: np.ndarray
    group_of: np.ndarray

    @property
    def n_groups(self) -> int:
        return int(self.start.shape[0])

    @classmethod
    def from_ranks(cls, ranks: np.ndarray, *, draws: bool = False) -> TieGroups:
        """Group by equal rank (only the order matters); a draw is one group if ``draws``, else OutcomeFree."""
        ranks = np.asarray(ranks)
        if ranks.ndim != 1:
            raise ValueError("ranks must be one-dimensional")
        n = ranks.shape[0]
        if n < 2:
            raise OutcomeFree("fewer than 2 players")
        order = np.argsort(ranks, kind="stable")
        sorted_ranks = ranks[order]
        new_group = np.empty(n, dtype=bool)
        new_group[0] = True
        new_group[1:] = sorted_ranks[1:] != sorted_ranks[:-1]
        start = np.flatnonzero(new_group)
        if start.shape[0] < 2 and not draws:
            raise OutcomeFree("everyone tied")
        size = np.diff(np.append(start, n))
        group_sorted = np.cumsum(new_group) - 1
        group_of = np.empty(n, dtype=np.int64)
        group_of[order] = group_sorted
        return cls(order=order, start=start, size=size, group_of=group_of)
