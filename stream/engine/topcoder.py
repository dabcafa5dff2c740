"""The Topcoder system (https://www.topcoder.com/community/competitive-programming/how-to-compete/ratings)
as the authors implement it (EbTech/Elo-MMR ``systems/topcoder_sys.rs``, f6f83bb); sigma is the volatility.

Per round of n players, W = the round's weight:

* competition factor CF = sqrt(mean(sigma^2) + sum (mu - mean mu)^2 / (n - 1));
* expected rank ex_i = sum_j Phi(sqrt(W) (mu_j - mu_i) / sqrt(sigma_i^2 + sigma_j^2)) (itself included),
  actual rank ac_i = (1 + lo_i + hi_i) / 2;
* performance p_i = mu_i + CF (Phi^-1(1 - ac_i/n) - Phi^-1(1 - ex_i/n)), clipped to ``perf_ceiling``;
* with k = rounds played including this one: weight = limit + (noob - limit)/k,
  cap = (150 + 1500/(k+1)) sqrt(W) weight / (0.18 + 0.42/k); weight <- weight W / (1 - weight),
  x 0.9 from rating 2000, x 0.8 from 2500;
* try = (mu + weight p) / (1 + weight); mu' = try clamped to mu +- cap;
  sigma' = sqrt((try - mu)^2 / weight + sigma^2 / (1 + weight)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import erfc, erfcinv

from stream.engine.ratings import ModelParams, ModelRound, PairOdds, Ratings, by_rows, tie_spans


@dataclass(frozen=True, slots=True)
class TopcoderParams(ModelParams):
    """Weight of a newcomer's first round (``weight_noob``) and the limit for veterans."""

    weight_noob: float = 0.6
    weight_limit: float = 0.18

    def __post_init__(self) -> None:
        self._require(0 < self.weight_noob < 1 and 0 < self.weight_limit < 1,
                      "weight_noob and weight_limit must be in (0, 1)")


def rate_round(before: Ratings, ranks: np.ndarray, params: TopcoderParams, *, weight: float = 1.0,
               perf_ceiling: float = math.inf) -> ModelRound:
    """Rate one round (see the module docstring); performance = the Topcoder performance."""
    n = len(before)
    lo, hi = tie_spans(ranks)
    mu = before.mu
    var = before.sigma * before.sigma
    mean_mu = mu.sum() / n
    competition = math.sqrt(var.sum() / n + float(((mu - mean_mu) ** 2).sum()) / (n - 1))
    sqrt_w = math.sqrt(weight)

    scale = sqrt_w / math.sqrt(2.0)

    def block(rows: slice) -> np.ndarray:
        # Phi(z_ij) = erfc(-z_ij / sqrt 2) / 2, z_ij = sqrt(W) (mu_j - mu_i) / sqrt(var_i + var_j)
        d = np.add.outer(var[rows], var)
        np.sqrt(d, out=d)
        t = np.subtract.outer(mu[rows], mu)
        t *= scale
        t /= d
        erfc(t, out=t)
        result: np.ndarray = 0.5 * t.sum(axis=1)
        return result

    expected = by_rows(block, n, n)
    actual = 0.5 * (1 + lo + hi)
    expected_perf = math.sqrt(2.0) * erfcinv(2.0 * expected / n)
    actual_perf = math.sqrt(2.0) * erfcinv(2.0 * actual / n)
    performance = np.minimum(mu + competition * (actual_perf - expected_perf), perf_ceiling)

    played = (before.rounds + 1).astype(float)
    w = params.weight_limit + (params.weight_noob - params.weight_limit) / played
    cap = (150.0 + 1500.0 / (played + 1.0)) * (sqrt_w * w / (0.18 + 0.42 / played))
    w = w * (weight / (1.0 - w))
    w = np.where(mu >= 2500.0, w * 0.8, np.where(mu >= 2000.0, w * 0.9, w))
    trial = (mu + w * performance) / (1.0 + w)
    new_mu = np.clip(trial, mu - cap, mu + cap)
    new_sigma = np.sqrt((trial - mu) ** 2 / w + var / (1.0 + w))
    return ModelRound(Ratings(new_mu, new_sigma, before.rounds + 1), performance)


def pair_odds(mu_a: np.ndarray, sigma_a: np.ndarray, mu_b: np.ndarray, sigma_b: np.ndarray, params: TopcoderParams,
              *, weight: float = 1.0) -> PairOdds:
    """Phi(sqrt(W) (mu_a - mu_b) / sqrt(sigma_a^2 + sigma_b^2)), the expected rank's term; no draws."""
    z = math.sqrt(weight) * (np.asarray(mu_a, dtype=float) - mu_b) / np.sqrt(np.square(sigma_a) + np.square(sigma_b))
    ahead: np.ndarray = 0.5 * erfc(-z / math.sqrt(2.0))
    return ahead, np.zeros_like(ahead)


def sample_performances(mu: np.ndarray, sigma: np.ndarray, params: TopcoderParams, *, weight: float,
                        rng: np.random.Generator, samples: int) -> np.ndarray:
    """mu plus N(0, sigma^2 / W): exactly :func:`pair_odds` for every pair."""
    return mu + sigma / math.sqrt(weight) * rng.standard_normal((samples, len(mu)))
