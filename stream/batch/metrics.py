"""Predictive metrics as the authors compute them (EbTech/Elo-MMR ``metrics.rs``
``compute_metrics_custom`` driven by ``bin/eval.rs``; REFERENCE.md "Metrics"): each round from index
``len(dataset) // 10`` on, before its update, from the participants' ``mu``, over "everyone" (rated
before) and "experienced" (``EXPERIENCED_MIN_ROUNDS`` earlier rounds), ranks renormalised in the subset:

* pair metric: 100 (1 - inversions / C(n, 2)), an inversion a pair with strictly better rank and
  strictly lower mu; weight n;
* rank deviation: stable sort by mu descending; position i errs by its distance to its tie group's
  [lo, hi]; 100 * sum(error) / (n - 1) / n; weight n; outcome-free subsets weigh 0.

:func:`score_rounds` is the one scorer of :class:`Metrics` and the online rating health
(``pipeline/health.py``); small rounds are scored together (measured: 30,000 duels in 0.05 s
against 3.5 s one by one), to the same floats as :func:`pair_metric` / :func:`rank_deviation`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from stream.engine.ratings import tie_spans

EXPERIENCED_MIN_ROUNDS = 5
"""'Experienced' players have at least this many earlier rounds (the authors' min_history)."""
SKIPPED_FRACTION_DENOMINATOR = 10
"""Rounds with index < len(dataset) // 10 are not scored (``bin/eval.rs``)."""


def count_inversions(values: np.ndarray) -> int:
    """Number of pairs i < j with ``values[i] > values[j]`` (strictly), in O(n log^2 n): a
    vectorised bottom-up merge sort, one ``searchsorted`` over (block, dense rank) keys a level."""
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
    order = np.argsort(ranks, kind="stable")  # the stable order by rank, each member's tie group span
    lo, hi = (span[order] for span in tie_spans(ranks))
    by_rating = np.argsort(-mu[order], kind="stable")
    position = np.empty(n, dtype=np.int64)
    position[by_rating] = np.arange(n)
    error = np.maximum(0, np.maximum(lo - position, position - hi))
    return 100.0 * float(error.sum()) / (n - 1) / n, n


SCORES = ("pair_all", "pair_all_w", "pair_exp", "pair_exp_w", "rank_all", "rank_all_w", "rank_exp", "rank_exp_w")
"""The columns of :func:`score_rounds`: (value, weight) of pair and rank x everyone / experienced."""
SUBSETS = (1, EXPERIENCED_MIN_ROUNDS)
"""Earlier rounds a participant needs to count in "everyone" and in "experienced"."""
SMALL_ROUND = 32
"""Rounds of at most this many players are scored together in padded (rounds, n, n) arrays."""


_INT_MAX, _INT_MIN = int(np.iinfo(np.int64).max), int(np.iinfo(np.int64).min)


def _small_scores(mu: np.ndarray, ranks: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """(R, 4): pair value and weight, rank value and weight of each row's valid members (``mu``,
    ``ranks``, ``valid`` (R, m)), as :func:`pair_metric` and :func:`rank_deviation` compute them."""
    n = valid.sum(axis=1)
    both = valid[:, :, None] & valid[:, None, :]
    r_i, r_k = ranks[:, :, None], ranks[:, None, :]
    m_i, m_k = mu[:, :, None], mu[:, None, :]
    inversions = (both & (r_i < r_k) & (m_i < m_k)).sum(axis=(1, 2))
    rank_lo = r_k.min(axis=2, where=valid[:, None, :], initial=_INT_MAX)
    rank_hi = r_k.max(axis=2, where=valid[:, None, :], initial=_INT_MIN)
    scored = (n >= 2) & (rank_lo[:, 0] != rank_hi[:, 0])
    # tie group span [lo, hi] in rank order; position in the (stable) order by mu descending,
    # ties in mu keeping rank order (ties in rank: input order)
    lo = (both & (r_k < r_i)).sum(axis=2)
    hi = (both & (r_k <= r_i)).sum(axis=2) - 1
    index = np.arange(mu.shape[1])
    before = (r_k < r_i) | ((r_k == r_i) & (index[None, None, :] < index[None, :, None]))
    position = (both & ((m_k > m_i) | ((m_k == m_i) & before))).sum(axis=2)
    error = np.where(valid, np.maximum(0, np.maximum(lo - position, position - hi)), 0).sum(axis=1)
    out = np.zeros((mu.shape[0], 4))
    safe = np.where(scored, n, 2)
    pairs = safe * (safe - 1) // 2
    out[:, 0] = np.where(scored, 100.0 * (1.0 - inversions / pairs), 0.0)
    out[:, 1] = np.where(scored, n, 0)
    out[:, 2] = np.where(scored, 100.0 * error.astype(np.float64) / (safe - 1) / safe, 0.0)
    out[:, 3] = out[:, 1]
    return out


def score_rounds(mu: np.ndarray, ranks: np.ndarray, earlier: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Every round's scores (:data:`SCORES`): round k at ``offsets[k]:offsets[k + 1]``, before its update."""
    n_rounds = offsets.shape[0] - 1
    out = np.zeros((n_rounds, len(SCORES)))
    sizes = np.diff(offsets)
    for size in np.unique(sizes):
        rows = np.flatnonzero(sizes == size)
        if size > SMALL_ROUND:
            for k in rows:
                a, b = offsets[k], offsets[k + 1]
                for j, min_rounds in enumerate(SUBSETS):
                    keep = earlier[a:b] >= min_rounds
                    out[k, 2 * j:2 * j + 2] = pair_metric(mu[a:b][keep], ranks[a:b][keep])
                    out[k, 4 + 2 * j:6 + 2 * j] = rank_deviation(mu[a:b][keep], ranks[a:b][keep])
            continue
        at = offsets[rows][:, None] + np.arange(size)[None, :]
        r_mu, r_ranks, r_earlier = mu[at], ranks[at].astype(np.int64), earlier[at]
        valid = np.concatenate([r_earlier >= min_rounds for min_rounds in SUBSETS])  # both subsets in one call
        scores = _small_scores(np.tile(r_mu, (len(SUBSETS), 1)), np.tile(r_ranks, (len(SUBSETS), 1)), valid)
        for j in range(len(SUBSETS)):
            part = scores[j * rows.shape[0]:(j + 1) * rows.shape[0]]
            out[rows, 2 * j:2 * j + 2] = part[:, 0:2]
            out[rows, 4 + 2 * j:6 + 2 * j] = part[:, 2:4]
    return out


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

    def observe_many(self, rounds: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]) -> None:
        """Score rounds before their update: (index, mu, ranks, earlier rounds) each, in index order."""
        first = self.n_rounds // SKIPPED_FRACTION_DENOMINATOR if self.start is None else self.start
        rounds = [r for r in rounds if r[0] >= first]
        if not rounds:
            return
        offsets = np.cumsum([0, *(r[1].shape[0] for r in rounds)], dtype=np.int64)
        mu, ranks, earlier = (np.concatenate([r[k] for r in rounds]) for k in (1, 2, 3))
        for row in score_rounds(mu, ranks, earlier, offsets):
            self.scored_rounds += 1
            self.pair_all.add(row[0], int(row[1]))
            self.pair_exp.add(row[2], int(row[3]))
            self.rank_all.add(row[4], int(row[5]))
            self.rank_exp.add(row[6], int(row[7]))

    def observe_rows(self, round_index: int, rows: np.ndarray, mu: np.ndarray, rounds: np.ndarray,
                     ranks: np.ndarray) -> None:
        """One round's :meth:`observe_many`, its players at table ``rows`` (-1: never rated) of ``mu``, ``rounds``."""
        seen = rows >= 0
        at = np.where(seen, rows, 0)
        self.observe_many([(round_index, np.where(seen, mu[at], 0.0), ranks, np.where(seen, rounds[at], 0))])

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
