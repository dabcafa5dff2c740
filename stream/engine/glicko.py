"""Glicko as the authors run it on multiplayer rounds (EbTech/Elo-MMR ``systems/glicko.rs``, f6f83bb);
``sig_perf = beta / sqrt(weight)``, ``q = (pi/sqrt 3) / sig_perf``:

* drift: sigma <- sqrt(sigma^2 + sig_drift^2);
* every participant i plays everyone (itself included, a 0.5-0.5 tie that cancels):
  g_j = 1 / sqrt(1 + sigma_j^2 / sig_perf^2), P_ij = logistic((mu_i - mu_j) / sqrt(sigma_j^2 + sig_perf^2)),
  update_i = mean_j g_j (S_ij - P_ij) with S the rank outcome (1 / 0.5 / 0);
* the round counts as one highly informative match (information 1/4, the authors' choice):
  sigma' = (sigma^-2 + q^2 / 4)^-1/2, mu' = mu + q sigma'^2 update_i.  No performance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from stream.engine.ratings import (
    DEFAULT_BETA, ModelParams, ModelRound, PairOdds, Ratings, by_rows, logistic_odds, noisy_skills, signed_sums,
    tie_spans,
)
from stream.engine.state import TANH_MULTIPLIER


@dataclass(frozen=True, slots=True)
class GlickoParams(ModelParams):
    """``beta``: performance noise of a weight-1 round; ``sig_drift``: uncertainty added per round."""

    beta: float = DEFAULT_BETA
    sig_drift: float = 35.0

    def __post_init__(self) -> None:
        self._require(self.beta > 0 and self.sig_drift >= 0, "beta must be positive and sig_drift >= 0")


def rate_round(before: Ratings, ranks: np.ndarray, params: GlickoParams, *, weight: float = 1.0,
               perf_ceiling: float = math.inf) -> ModelRound:
    """Rate one round (see the module docstring); ``perf_ceiling`` is unused (no performance)."""
    n = len(before)
    lo, hi = tie_spans(ranks)
    sig_perf = params.beta / math.sqrt(weight)
    mu = before.mu
    sigma = np.hypot(before.sigma, params.sig_drift)
    g = 1.0 / np.hypot(1.0, sigma / sig_perf)
    # P_ij = logistic((mu_i - mu_j) / scale_j) = expit(TM mu_i / scale_j - TM mu_j / scale_j)
    slope = TANH_MULTIPLIER / np.hypot(sigma, sig_perf)
    offset = mu * slope

    def block(rows: slice) -> np.ndarray:
        t = np.multiply.outer(mu[rows], slope)
        t -= offset
        expit(t, out=t)
        result: np.ndarray = t @ g
        return result

    won = 0.5 * (signed_sums(g, lo, hi) + g.sum())  # sum_j g_j S_ij
    update = (won - by_rows(block, n, n)) / n
    q = TANH_MULTIPLIER / sig_perf
    info = 0.25 * q * q
    new_sigma = 1.0 / np.sqrt(sigma**-2 + info)
    new_mu = mu + q * new_sigma * new_sigma * update
    return ModelRound(Ratings(new_mu, new_sigma, before.rounds + 1), None)


def pair_odds(mu_a: np.ndarray, sigma_a: np.ndarray, mu_b: np.ndarray, sigma_b: np.ndarray, params: GlickoParams,
              *, weight: float = 1.0) -> PairOdds:
    """Glickman's two-player E with g of the combined deviation, E = 1 / (1 + 10^(-g(sqrt(RD_a^2 +
    RD_b^2)) (r_a - r_b) / 400)), i.e. logistic(TM (r_a - r_b) / sqrt(sig_perf^2 + RD_a^2 + RD_b^2)),
    RDs after the round's drift; no draws."""
    sig_perf = params.beta / math.sqrt(weight)
    return logistic_odds(np.asarray(mu_a, dtype=float) - mu_b, np.sqrt(
        sig_perf**2 + np.square(sigma_a) + np.square(sigma_b) + 2.0 * params.sig_drift**2))


def sample_performances(mu: np.ndarray, sigma: np.ndarray, params: GlickoParams, *, weight: float,
                        rng: np.random.Generator, samples: int) -> np.ndarray:
    """N(mu, RD^2) skills plus Gumbel noise of scale sig_perf / TM: E up to its g approximation."""
    return noisy_skills(mu, np.hypot(sigma, params.sig_drift), params.beta / math.sqrt(weight) / TANH_MULTIPLIER,
                        rng, samples)
