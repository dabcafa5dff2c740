"""Multiplayer Elo over a ranking (Kreimeier, "Rising from the Ranks", seed 002): every pair of a
round is one encounter, rated from the ratings before the round.

* E_ij = Fermi(mu_i - mu_j) = 1 / (1 + exp(-(mu_i - mu_j) / T)) (the seed's listing passes
  ``opponent - my``; its text, the largest gain for a weak player beating a strong one, needs this);
* S_ij = 1 (better rank), 0.5 (tie), 0 (worse);
* mu_i += max_gain / (n - 1) sum_{j != i} (S_ij - E_ij): a round is worth one encounter whatever its size.

Zero-sum, so the mean stays at ``mu_noob``; sigma stays the prior; no performance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from stream.engine.ratings import ModelParams, ModelRound, PairOdds, Ratings, by_rows, noisy_skills, tie_spans


@dataclass(frozen=True, slots=True)
class EloMultiplayerParams(ModelParams):
    """``temperature`` T of the Fermi function (400/ln 10: chess Elo) and ``max_gain`` of a round."""

    temperature: float = 400.0 / math.log(10.0)
    max_gain: float = 32.0

    def __post_init__(self) -> None:
        self._require(self.temperature > 0 and self.max_gain > 0, "temperature and max_gain must be positive")


def expectancy(delta: np.ndarray, temperature: float) -> np.ndarray:
    """Fermi(delta) = 1 / (1 + exp(-delta / T)) (scipy's expit: no overflow, accurate tails)."""
    result: np.ndarray = expit(delta / temperature)
    return result


def rate_round(before: Ratings, ranks: np.ndarray, params: EloMultiplayerParams, *, weight: float = 1.0,
               perf_ceiling: float = math.inf) -> ModelRound:
    """Rate one round (see the module docstring); ``weight`` scales ``max_gain``."""
    n = len(before)
    lo, hi = tie_spans(ranks)
    mu = before.mu
    score = (n - 1 - hi) + 0.5 * (hi - lo)  # wins + half the ties (oneself excluded)

    def block(rows: slice) -> np.ndarray:
        t = np.subtract.outer(mu[rows], mu)
        t *= 1.0 / params.temperature
        expit(t, out=t)
        result: np.ndarray = t.sum(axis=1)
        return result

    expected = by_rows(block, n, n) - 0.5  # oneself: E_ii = 1/2
    new_mu = mu + weight * params.max_gain / (n - 1) * (score - expected)
    return ModelRound(Ratings(new_mu, before.sigma.copy(), before.rounds + 1), None)


def pair_odds(mu_a: np.ndarray, sigma_a: np.ndarray, mu_b: np.ndarray, sigma_b: np.ndarray,
              params: EloMultiplayerParams, *, weight: float = 1.0) -> PairOdds:
    """E_ab = Fermi(mu_a - mu_b) (:func:`expectancy`), no draws; sigma and weight play no part."""
    ahead = expectancy(np.asarray(mu_a, dtype=float) - np.asarray(mu_b, dtype=float), params.temperature)
    return ahead, np.zeros_like(ahead)


def sample_performances(mu: np.ndarray, sigma: np.ndarray, params: EloMultiplayerParams, *, weight: float,
                        rng: np.random.Generator, samples: int) -> np.ndarray:
    """mu plus Gumbel noise of scale T: exactly the Fermi function of :func:`pair_odds` for every pair."""
    return noisy_skills(mu, None, params.temperature, rng, samples)
