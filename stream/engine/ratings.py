"""The interface shared by the rating-only models (glicko, codeforces, topcoder, bar,
elo-multiplayer): a parameters dataclass, per-player state arrays, and one call per round.

Each model module defines ``<Model>Params(ModelParams)`` and
``rate_round(before, ranks, params, *, weight=1.0, perf_ceiling=inf) -> ModelRound``: ``before``
holds the round's participants (aligned with ``ranks``, 1-based, equal ranks tie), ``after`` is
their new state, ``performance`` their performance in this round where the system has one.
Pure numpy, no I/O; the caller skips outcome-free rounds (fewer than two players, all tied).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

MU_NOOB = 1500.0
"""A newcomer's rating (the authors' default, as for Elo-MMR)."""
SIG_NOOB = 350.0
"""A newcomer's uncertainty (the authors' default)."""
TANH_MULTIPLIER = math.pi / 1.7320508075688772
"""pi / sqrt(3): the logistic distribution of unit standard deviation is 1/2 + tanh(TM z / 2) / 2
(``numerical.rs``)."""
SOLVER_BOUNDS = (-6000.0, 9000.0)
"""Bracket of the authors' root solves (``robust_average``)."""
DEFAULT_BETA = 400.0 * TANH_MULTIPLIER / math.log(10.0)
"""~315.1: the logistic noise whose win probabilities are chess Elo's 1/(1 + 10^(-d/400))."""
BLOCK_ELEMENTS = 1 << 20
"""Pairwise (row x opponent) sums are evaluated in row blocks of at most this many elements."""


@dataclass(frozen=True, slots=True)
class ModelParams:
    """What every model's parameters hold: a newcomer's prior."""

    mu_noob: float = MU_NOOB
    sig_noob: float = SIG_NOOB

    def __post_init__(self) -> None:
        if not (math.isfinite(self.mu_noob) and self.sig_noob > 0):
            raise ValueError("mu_noob must be finite and sig_noob positive")


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


def tie_spans(ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """0-based inclusive positions [lo, hi] of each player's tie group in the round's order
    (the authors' standings ``(player, lo, hi)``): lo players ranked strictly better, n-1-hi
    strictly worse."""
    ordered = np.sort(ranks)
    lo = np.searchsorted(ordered, ranks, side="left")
    hi = np.searchsorted(ordered, ranks, side="right") - 1
    return lo.astype(np.int64), hi.astype(np.int64)


def outcomes(lo_rows: np.ndarray, lo_cols: np.ndarray) -> np.ndarray:
    """Score of each row player against each column player: 1 win, 0.5 tie, 0 loss (only the
    tie groups' first positions are compared, as the authors do)."""
    rows = lo_rows[:, None]
    cols = lo_cols[None, :]
    result: np.ndarray = (rows < cols).astype(float) + 0.5 * (rows == cols)
    return result


def row_sums(block: Callable[[slice], np.ndarray], n_rows: int, n_cols: int) -> np.ndarray:
    """``sum(block(rows), axis=1)`` for all rows, ``block(rows)`` being a (rows x n_cols) array,
    evaluated in row blocks of at most :data:`BLOCK_ELEMENTS` elements (bounded memory)."""
    step = max(1, BLOCK_ELEMENTS // max(1, n_cols))
    out = np.empty(n_rows)
    for start in range(0, n_rows, step):
        rows = slice(start, min(n_rows, start + step))
        out[rows] = block(rows).sum(axis=1)
    return out


def logistic_cdf(z: np.ndarray) -> np.ndarray:
    """The standard logistic CDF (unit variance), the authors' ``standard_logistic_cdf``."""
    result: np.ndarray = 0.5 + 0.5 * np.tanh(0.5 * TANH_MULTIPLIER * z)
    return result
