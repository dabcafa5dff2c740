"""The Codeforces system (Mike Mirzayanov's, https://codeforces.com/blog/entry/20762) as the
authors model it (EbTech/Elo-MMR ``systems/codeforces_sys.rs``, f6f83bb).

Every participant counts as a logistic opponent N(mu_j, sig_perf), ``sig_perf = beta/sqrt(weight)``;
with ``c = (pi/sqrt 3) / (2 sig_perf)`` and F(x) = sum_j tanh(c (x - mu_j)) over everyone:

* actual rank (in sig_perf units) ac_i = (lo_i + hi_i + 2) / 2, expected rank
  ex_i = 1/2 + sum_j logistic((mu_j - mu_i)/sig_perf) = (n + 1 - F(mu_i)) / 2;
* the performance p_i is the rating whose expected rank is their geometric mean:
  F(p_i) = n + 1 - 2 sqrt(ac_i ex_i)  (the authors' ``robust_average`` of the geo offset),
  then clipped to the round's ``perf_ceiling``;
* mu' = (mu + w p) / (1 + w) with w = weight x ``weight``; sigma is never changed.

F is increasing and shared by the round: each root is bracketed by two consecutive sorted ratings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from stream.engine.numerical import solve_bracketed
from stream.engine.params import SOLVER_BOUNDS
from stream.engine.ratings import (
    DEFAULT_BETA, ModelParams, ModelRound, PairOdds, Ratings, by_rows, logistic_odds, noisy_skills, tie_spans,
)
from stream.engine.state import TANH_MULTIPLIER


@dataclass(frozen=True, slots=True)
class CodeforcesParams(ModelParams):
    """``beta``: performance noise of a weight-1 round (the scale); ``weight``: w of mu' = (mu + w p)/(1 + w)."""

    beta: float = DEFAULT_BETA
    weight: float = 1.0

    def __post_init__(self) -> None:
        self._require(self.beta > 0 and self.weight > 0, "beta and weight must be positive")


def tanh_sum(x: np.ndarray, centres: np.ndarray, c: float) -> tuple[np.ndarray, np.ndarray]:
    """F(x) = sum_j tanh(c (x - centres_j)) and F'(x), for every x (row blocks)."""
    n = centres.shape[0]

    def block(rows: slice) -> np.ndarray:
        # tanh(y) = 2 expit(2y) - 1 and 1 - tanh(y)^2 = 4 e (1 - e): expit is the faster ufunc
        e = np.subtract.outer(x[rows], centres)
        e *= 2.0 * c
        expit(e, out=e)
        out = np.empty((e.shape[0], 2))
        out[:, 0] = 2.0 * e.sum(axis=1) - n
        out[:, 1] = 4.0 * c * np.einsum("ij,ij->i", e, 1.0 - e)
        return out

    both = by_rows(block, x.shape[0], n)
    return both[:, 0], both[:, 1]


def solve_tanh_sum(targets: np.ndarray, centres: np.ndarray, c: float, known: np.ndarray) -> np.ndarray:
    """x with F(x) = target for every target (``known`` = F(centres)); out of bounds: at a bound."""
    order = np.argsort(centres, kind="stable")
    xs = centres[order]
    fs = np.maximum.accumulate(known[order])  # F is increasing: remove rounding wiggles
    k = np.searchsorted(fs, targets)
    n = xs.shape[0]
    lo = np.where(k > 0, xs[np.maximum(k - 1, 0)], SOLVER_BOUNDS[0])
    hi = np.where(k < n, xs[np.minimum(k, n - 1)], SOLVER_BOUNDS[1])
    lo = np.clip(lo, *SOLVER_BOUNDS)
    hi = np.clip(hi, *SOLVER_BOUNDS)
    f_lo = np.where(k > 0, fs[np.maximum(k - 1, 0)], -float(n))
    f_hi = np.where(k < n, fs[np.minimum(k, n - 1)], float(n))
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.clip((targets - f_lo) / (f_hi - f_lo), 0.0, 1.0)
    guess = lo + np.where(np.isfinite(frac), frac, 0.5) * (hi - lo)

    def equations(x: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        value, slope = tanh_sum(x, centres, c)
        return value - targets[idx], slope

    return solve_bracketed(equations, lo, hi, guess, increasing=True)


def rate_round(before: Ratings, ranks: np.ndarray, params: CodeforcesParams, *, weight: float = 1.0,
               perf_ceiling: float = math.inf) -> ModelRound:
    """Rate one round (see the module docstring); performance = the geometric-mean performance."""
    n = len(before)
    lo, hi = tie_spans(ranks)
    sig_perf = params.beta / math.sqrt(weight)
    c = 0.5 * TANH_MULTIPLIER / sig_perf
    mu = before.mu
    at_mu, _ = tanh_sum(mu, mu, c)
    actual = 0.5 * (lo + hi + 2)
    expected = 0.5 * (n + 1 - at_mu)
    targets = n + 1 - 2.0 * np.sqrt(actual * expected)
    performance = np.minimum(solve_tanh_sum(targets, mu, c, at_mu), perf_ceiling)
    w = weight * params.weight
    new_mu = (mu + w * performance) / (1.0 + w)
    return ModelRound(Ratings(new_mu, before.sigma.copy(), before.rounds + 1), performance)


def pair_odds(mu_a: np.ndarray, sigma_a: np.ndarray, mu_b: np.ndarray, sigma_b: np.ndarray, params: CodeforcesParams,
              *, weight: float = 1.0) -> PairOdds:
    """logistic((mu_a - mu_b) / sig_perf), the term of the expected rank of :func:`rate_round`
    (= 1 / (1 + 10^((r_b - r_a)/400)) at the default beta); no draws, sigma plays no part."""
    return logistic_odds(np.asarray(mu_a, dtype=float) - np.asarray(mu_b, dtype=float), params.beta / math.sqrt(weight))


def sample_performances(mu: np.ndarray, sigma: np.ndarray, params: CodeforcesParams, *, weight: float,
                        rng: np.random.Generator, samples: int) -> np.ndarray:
    """mu plus Gumbel noise of scale sig_perf / TM: exactly :func:`pair_odds` for every pair."""
    return noisy_skills(mu, None, params.beta / math.sqrt(weight) / TANH_MULTIPLIER, rng, samples)
