"""Predictive metrics of a rating system, exactly as the authors compute them
(EbTech/Elo-MMR ``metrics.rs`` ``compute_metrics_custom`` driven by ``bin/eval.rs``; see
/work/shared/REFERENCE.md "Metrics"):

* for every round with index >= ``len(dataset) // 10`` (the first 10 % are rated, not scored),
  BEFORE the round's update, from each participant's current ``mu``;
* subsets: participants already rated at least once ("everyone") and those with at least
  ``EXPERIENCED_MIN_ROUNDS`` earlier rounds ("experienced"); ranks renormalised inside the subset
  (a tie group spans [index of its first member, index of its last member]);
* pair metric: 100 (1 - inversions / C(n, 2)), an inversion being a pair with strictly better
  rank and strictly lower mu (ties in rank or in mu are never inversions); weight n;
* rank deviation: stable sort by mu descending (equal mu keep rank order); position i errs by
  its distance to [lo, hi]; value 100 * sum(error) / (n - 1) / n; weight n;
* outcome-free subsets (fewer than two players, or all tied) weigh 0; the aggregate is the
  weighted mean.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

EXPERIENCED_MIN_ROUNDS = 5
"""'Experienced' players have at least this many earlier rounds (the authors' min_history)."""
SKIPPED_FRACTION_DENOMINATOR = 10
"""Rounds with index < len(dataset) // 10 are not scored (``bin/eval.rs``)."""


def count_inversions(values: np.ndarray) -> int:
    """Number of pairs i < j with ``values[i] > values[j]`` (strictly), in O(n log^2 n).

    Bottom-up merge sort in vectorised form: at each level, every element of a right half
    counts the elements of its left half that are strictly greater, with one ``searchsorted``
    over (block id, dense rank) keys.
    """
    n = int(values.shape[0])
    if n < 2:
        return 0
    _, dense = np.unique(values, return_inverse=True)
    dense = dense.astype(np.int64).reshape(-1)
    position = np.arange(n, dtype=np.int64)
    total = 0
    width = 1
    while width < n:
        pair = position // (2 * width)
        is_right = (position // width) % 2 == 1
        left_keys = np.sort(pair[~is_right] * n + dense[~is_right])
        right_pair = pair[is_right]
        right_keys = right_pair * n + dense[is_right]
        block_end = np.searchsorted(left_keys, right_pair * n + n, side="left")
        not_greater = np.searchsorted(left_keys, right_keys, side="right")
        total += int((block_end - not_greater).sum())
        width *= 2
    return total


def renormalised_ranks(ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Order the subset by rank (stable) and give each member its tie group's [lo, hi] span.

    Returns ``(order, lo, hi)``: ``order`` sorts the inputs by rank; ``lo``/``hi`` are aligned
    with the sorted order (0-based positions of the first/last member of each tie group).
    """
    order = np.argsort(ranks, kind="stable")
    sorted_ranks = ranks[order]
    n = sorted_ranks.shape[0]
    starts = np.r_[True, sorted_ranks[1:] != sorted_ranks[:-1]] if n else np.zeros(0, dtype=bool)
    group = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    last = np.r_[first[1:] - 1, n - 1] if n else first
    return order, first[group], last[group]


def pair_metric(mu: np.ndarray, ranks: np.ndarray) -> tuple[float, int]:
    """(value, weight) of the pair-inversion metric for one round's subset."""
    n = int(mu.shape[0])
    if n < 2 or np.all(ranks == ranks[0]):
        return 0.0, 0
    # Rank order, and inside a tie group rating descending: then every strict "ascent" in mu
    # (i < j, mu_i < mu_j) is a pair with strictly better rank and strictly lower rating.
    order = np.lexsort((-mu, ranks))
    inversions = count_inversions(-mu[order])
    pairs = n * (n - 1) // 2
    return 100.0 * (1.0 - inversions / pairs), n


def rank_deviation(mu: np.ndarray, ranks: np.ndarray) -> tuple[float, int]:
    """(value, weight) of the rank-deviation metric for one round's subset."""
    n = int(mu.shape[0])
    if n < 2 or np.all(ranks == ranks[0]):
        return 0.0, 0
    order, lo, hi = renormalised_ranks(ranks)
    by_rating = np.argsort(-mu[order], kind="stable")
    position = np.empty(n, dtype=np.int64)
    position[by_rating] = np.arange(n)
    error = np.maximum(0, np.maximum(lo - position, position - hi))
    return 100.0 * float(error.sum()) / (n - 1) / n, n


@dataclass
class WeightedMean:
    """Running sum of weight * value and of weight."""

    total: float = 0.0
    weight: int = 0

    def add(self, value: float, weight: int) -> None:
        self.total += value * weight
        self.weight += weight

    @property
    def mean(self) -> float:
        return self.total / self.weight if self.weight else float("nan")


@dataclass
class Metrics:
    """Accumulates the four numbers pair/rank x everyone/experienced over a replay."""

    n_rounds: int
    start: int | None = None
    """First scored round index; None = the authors' rule (skip the first 10 %). ``stream tune``
    scores held-out rounds only by starting at the split."""
    pair_all: WeightedMean = field(default_factory=WeightedMean)
    pair_exp: WeightedMean = field(default_factory=WeightedMean)
    rank_all: WeightedMean = field(default_factory=WeightedMean)
    rank_exp: WeightedMean = field(default_factory=WeightedMean)
    scored_rounds: int = 0

    @property
    def first_scored(self) -> int:
        """Index of the first scored round (``start``, else the first 10 % are skipped)."""
        return self.n_rounds // SKIPPED_FRACTION_DENOMINATOR if self.start is None else self.start

    def observe(self, round_index: int, mu: np.ndarray, ranks: np.ndarray, earlier_rounds: np.ndarray) -> None:
        """Score one round before its update.  ``mu``/``ranks``/``earlier_rounds`` are aligned
        over the round's participants; players never rated before have ``earlier_rounds == 0``."""
        if round_index < self.first_scored:
            return
        self.scored_rounds += 1
        for min_rounds, pair, rank in ((1, self.pair_all, self.rank_all),
                                       (EXPERIENCED_MIN_ROUNDS, self.pair_exp, self.rank_exp)):
            keep = earlier_rounds >= min_rounds
            pair.add(*pair_metric(mu[keep], ranks[keep]))
            rank.add(*rank_deviation(mu[keep], ranks[keep]))

    def observe_rows(self, round_index: int, rows: np.ndarray, mu: np.ndarray, rounds: np.ndarray,
                     ranks: np.ndarray) -> None:
        """:meth:`observe` for participants at table ``rows`` (-1 = never rated) of the columns
        ``mu`` and ``rounds`` (a ladder's ratings and rounds played)."""
        seen = rows >= 0
        at = np.where(seen, rows, 0)
        self.observe(round_index, np.where(seen, mu[at], 0.0), ranks, np.where(seen, rounds[at], 0))

    def summary(self) -> dict[str, float | int]:
        return {
            "pair_all": self.pair_all.mean,
            "pair_exp": self.pair_exp.mean,
            "rank_all": self.rank_all.mean,
            "rank_exp": self.rank_exp.mean,
            "scored_rounds": self.scored_rounds,
            "participations_all": self.pair_all.weight,
            "participations_exp": self.pair_exp.weight,
        }
