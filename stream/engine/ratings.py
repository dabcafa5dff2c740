"""The interface shared by the rating-only models: each module defines ``<Model>Params(ModelParams)``,
``rate_round(before, ranks, params, *, weight=1.0, perf_ceiling=inf) -> ModelRound`` (``ranks``
1-based, equal ranks tie; the caller skips outcome-free rounds), and for ``predict``
``pair_odds(...) -> PairOdds`` and ``sample_performances(...)`` (:class:`stream.engine.models.Model`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from stream.engine.numerical import map_points, worth_threads
from stream.engine.params import MU_NOOB, SIG_NOOB, SOLVER_BOUNDS
from stream.engine.state import TANH_MULTIPLIER

DEFAULT_BETA = 400.0 * TANH_MULTIPLIER / math.log(10.0)
"""~315.1: the logistic noise whose win probabilities are chess Elo's 1/(1 + 10^(-d/400))."""
PairOdds = tuple[np.ndarray, np.ndarray]
"""What each model's ``pair_odds(mu_a, sigma_a, mu_b, sigma_b, params, *, weight)`` returns,
elementwise over broadcast arrays: (P(a finishes ahead of b), P(a and b tie)) in the next round."""
BLOCK_ELEMENTS = 1 << 16
"""Pairwise (row x opponent) sums are evaluated in row blocks of at most this many elements."""


@dataclass(frozen=True, slots=True)
class ModelParams:
    """What every model's parameters hold: a newcomer's prior, and whether a draw is rated (as
    :attr:`stream.engine.params.Params.draws_rate`; False: skipped as an "outcome free" contest)."""

    mu_noob: float = MU_NOOB
    sig_noob: float = SIG_NOOB
    draws_rate: bool = True

    def __post_init__(self) -> None:
        if not (math.isfinite(self.mu_noob) and self.sig_noob > 0):
            raise ValueError("mu_noob must be finite and sig_noob positive")

    def _require(self, ok: bool, message: str) -> None:
        """A subclass's ``__post_init__``: these checks, then its own ``ok`` (else ValueError ``message``)."""
        ModelParams.__post_init__(self)
        if not ok:
            raise ValueError(message)


@dataclass(slots=True)
class Ratings:
    """Per-player state arrays (aligned): rating, uncertainty, rounds rated before."""

    mu: np.ndarray
    sigma: np.ndarray
    rounds: np.ndarray

    @classmethod
    def new(cls, n: int, params: ModelParams) -> Ratings:
        """``n`` newcomers with the prior (mu_noob, sig_noob) and no rounds."""
        return cls(np.full(n, params.mu_noob), np.full(n, params.sig_noob), np.zeros(n, dtype=np.int64))

    def __len__(self) -> int:
        return int(self.mu.shape[0])


@dataclass(slots=True)
class ModelRound:
    """A rated round: the participants' new states and, where the model has one, performances."""

    after: Ratings
    performance: np.ndarray | None


def logistic_odds(delta: np.ndarray, spread: np.ndarray | float) -> PairOdds:
    """``pair_odds`` of a logistic difference of sd ``spread``: (expit(TM delta / spread), no ties)."""
    ahead: np.ndarray = expit(TANH_MULTIPLIER * np.asarray(delta, dtype=float) / spread)
    return ahead, np.zeros_like(ahead)


def noisy_skills(mu: np.ndarray, sd: np.ndarray | None, gumbel: float, rng: np.random.Generator,
                 samples: int) -> np.ndarray:
    """``samples`` draws of mu + N(0, sd^2) (none if ``sd`` is None) + Gumbel noise of scale
    ``gumbel``: a pair's difference of Gumbels is logistic (the rankings are Plackett-Luce)."""
    shape = (samples, len(mu))
    skill = mu if sd is None else mu + sd * rng.standard_normal(shape)
    return skill + rng.gumbel(0.0, gumbel, shape)


def tie_spans(ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """0-based inclusive positions [lo, hi] of each player's tie group in the round's order
    (the authors' standings ``(player, lo, hi)``): lo players ranked strictly better, n-1-hi
    strictly worse."""
    ordered = np.sort(ranks)
    lo = np.searchsorted(ordered, ranks, side="left")
    hi = np.searchsorted(ordered, ranks, side="right") - 1
    return lo.astype(np.int64), hi.astype(np.int64)


def signed_sums(weights: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """sum_j weights_j sign(lo_j - lo_i) for every player i, in O(n log n) by prefix sums in rank order."""
    order = np.argsort(lo, kind="stable")
    prefix = np.concatenate(([0.0], np.cumsum(weights[order])))
    result: np.ndarray = (prefix[-1] - prefix[hi + 1]) - prefix[lo]
    return result


def by_rows(block: Callable[[slice], np.ndarray], n_rows: int, n_cols: int) -> np.ndarray:
    """``block(rows)`` (one value per row of a rows x n_cols pairwise computation) for all rows, in
    blocks of at most :data:`BLOCK_ELEMENTS` elements, on the thread pool when large (same floats)."""
    step = max(1, BLOCK_ELEMENTS // max(1, n_cols))
    blocks = [slice(start, min(n_rows, start + step)) for start in range(0, n_rows, step)]
    parts = map_points(block, blocks, parallel=worth_threads(n_rows * n_cols) and len(blocks) > 1)
    return np.concatenate(parts) if parts else np.empty(0)
