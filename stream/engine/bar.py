"""BAR, the Bayesian Approximation Ranking (Weng & Lin, JMLR 2011, Algorithm 1 "BT-Full") as the
authors run it (EbTech/Elo-MMR ``systems/bar.rs``, f6f83bb); ``s2 = beta^2 / weight``:

* drift: sigma <- sqrt(sigma^2 + sig_drift^2);
* c_ij = sqrt(sigma_i^2 + sigma_j^2 + 2 s2), P_ij = logistic((mu_i - mu_j) / c_ij),
  update_i = mean_j (S_ij - P_ij) / c_ij over everyone (itself included, which cancels);
* mu' = mu + sigma^2 update_i; the round counts as one informative match:
  sigma' = sigma sqrt(max(kappa, 1 - sigma^2 / (4 (sigma^2 + 2 s2)))).  No performance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from stream.engine.ratings import (
    DEFAULT_BETA, ModelParams, ModelRound, PairOdds, Ratings, by_rows, logistic_odds, noisy_skills, tie_spans,
)
from stream.engine.state import TANH_MULTIPLIER


@dataclass(frozen=True, slots=True)
class BarParams(ModelParams):
    """``beta``: noise of a weight-1 round; ``sig_drift``: drift per round; ``kappa``: variance floor."""

    beta: float = DEFAULT_BETA
    sig_drift: float = 35.0
    kappa: float = 1e-4

    def __post_init__(self) -> None:
        self._require(self.beta > 0 and self.sig_drift >= 0 and 0 < self.kappa <= 1,
                      "beta must be positive, sig_drift >= 0 and 0 < kappa <= 1")


def rate_round(before: Ratings, ranks: np.ndarray, params: BarParams, *, weight: float = 1.0,
               perf_ceiling: float = math.inf) -> ModelRound:
    """Rate one round (see the module docstring); ``perf_ceiling`` is unused (no performance)."""
    n = len(before)
    lo, _ = tie_spans(ranks)
    sig_perf_sq = params.beta**2 / weight
    mu = before.mu
    sigma = np.hypot(before.sigma, params.sig_drift)
    var = sigma * sigma

    spread = var + 2.0 * sig_perf_sq
    scaled = TANH_MULTIPLIER * mu
    place = lo.astype(float)

    def block(rows: slice) -> np.ndarray:
        # (S_ij - P_ij) / c_ij with P_ij = logistic((mu_i - mu_j) / c_ij) = expit(TM (mu_i - mu_j) / c_ij)
        # and S_ij = 1/2 - clip(lo_i - lo_j, -1/2, 1/2) (1 win, 1/2 tie, 0 loss)
        inv = np.add.outer(var[rows], spread)
        np.sqrt(inv, out=inv)
        np.reciprocal(inv, out=inv)
        p = np.subtract.outer(scaled[rows], scaled)
        p *= inv
        expit(p, out=p)
        s = np.subtract.outer(place[rows], place)
        np.clip(s, -0.5, 0.5, out=s)
        s += p
        result: np.ndarray = 0.5 * inv.sum(axis=1) - np.einsum("ij,ij->i", s, inv)
        return result

    update = by_rows(block, n, n) / n
    info = 0.25 / (var + 2.0 * sig_perf_sq) * var
    new_sigma = sigma * np.sqrt(np.maximum(params.kappa, 1.0 - info))
    new_mu = mu + update * var
    return ModelRound(Ratings(new_mu, new_sigma, before.rounds + 1), None)


def pair_odds(mu_a: np.ndarray, sigma_a: np.ndarray, mu_b: np.ndarray, sigma_b: np.ndarray, params: BarParams,
              *, weight: float = 1.0) -> PairOdds:
    """BAR's P_ab = logistic((mu_a - mu_b) / c_ab), c_ab = sqrt(sigma_a^2 + sigma_b^2 + 2 beta^2 / weight)
    (Weng & Lin 2011, eq. (43)), sigmas after the round's drift; no draws."""
    drift_and_noise = 2.0 * params.sig_drift**2 + 2.0 * params.beta**2 / weight
    return logistic_odds(np.asarray(mu_a, dtype=float) - mu_b,
                         np.sqrt(np.square(sigma_a) + np.square(sigma_b) + drift_and_noise))


def sample_performances(mu: np.ndarray, sigma: np.ndarray, params: BarParams, *, weight: float,
                        rng: np.random.Generator, samples: int) -> np.ndarray:
    """Skill ~ N(mu, sigma^2) (after drift) plus Gumbel noise whose pair difference is logistic of sd
    sqrt 2 beta / sqrt weight: P_ab up to the logistic-normal approximation of c_ab."""
    return noisy_skills(mu, np.hypot(sigma, params.sig_drift),
                        math.sqrt(2.0) * params.beta / math.sqrt(weight) / TANH_MULTIPLIER, rng, samples)
