"""Outcome predictions from current ratings: who finishes ahead, expected order, match quality.

The paper's model (Section 2): skill ``S_i ~ N(mu_i, sigma_i^2 + gamma^2)`` after the drift
(Algorithm 2), performance ``P_i = S_i + eps_i``, noise of sd beta: logistic for Elo-MMR(rho)
(scale ``s = beta*sqrt(3)/pi``), Gaussian for Elo-MMchi. P(i ahead of j) = P(Z + D > 0),
``Z ~ N(mu_i - mu_j, sigma_i^2 + sigma_j^2 + 2 gamma^2)``, ``D = eps_i - eps_j``:

* Gaussian noise: exact, ``Phi(m / sqrt(v + 2 beta^2))``;
* logistic noise: D's CDF ``F_D(x) = e^x (e^x - x - 1) / (e^x - 1)^2`` and density
  ``f_D(x) = e^x ((x - 2) e^x + x + 2) / (e^x - 1)^3`` are closed form; the Gaussian expectation is
  a trapezoid rule over the smoother of ``E_Z[F_D(Z/s)]`` and ``E_D[Phi((m + sD)/sqrt(v))]``.

Expected rank = 1 + sum_j (P(j ahead of i) + P(tie)/2); the rank distribution is seeded Monte
Carlo. Match quality: the model's own (TrueSkill's), else the mean pairwise binary entropy of
"who finishes ahead" (1: every pair a coin flip). A ladder rated by a rating-only model is
predicted with its own ``pair_odds`` and ``sample_performances`` (:class:`RatedModel`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtr

from stream.engine.ladders import LadderConfig
from stream.engine.models import Model
from stream.engine.params import Params, Variant
from stream.engine.ratings import ModelParams
from .teams import team_beliefs

LOGISTIC_SCALE_PER_SD = math.sqrt(3.0) / math.pi
"""A logistic distribution with standard deviation 1 has scale sqrt(3)/pi."""

GAUSS_GRID = np.linspace(-9.0, 9.0, 181)
"""Quadrature nodes (standard deviations) for E over a standard normal: tails beyond 9 sd < 1e-18."""
LOGDIFF_GRID = np.linspace(-45.0, 45.0, 451)
"""Quadrature nodes for E over the standard logistic difference: tail mass beyond 45 < 1e-17."""
SERIES_CUTOFF = 1e-2
"""Below this |x| the closed forms of F_D, f_D lose digits; their Taylor series are used."""

DEFAULT_SAMPLES = 20_000
MAX_SAMPLE_CELLS = 20_000_000
"""Cap on samples x players for the Monte Carlo rank distribution (memory ~ 8 bytes each)."""


@dataclass(frozen=True)
class PerformanceModel:
    """The per-round performance model of a ladder: noise sd ``beta``, drift sd ``gamma``."""

    beta: float
    gamma: float = 0.0
    kind: Variant = "logistic"

    def __post_init__(self) -> None:
        if not (self.beta > 0 and math.isfinite(self.beta)):
            raise ValueError(f"beta must be finite and > 0, got {self.beta}")
        if not (self.gamma >= 0 and math.isfinite(self.gamma)):
            raise ValueError(f"gamma must be finite and >= 0, got {self.gamma}")
        if self.kind not in ("logistic", "gaussian"):
            raise ValueError(f"kind must be logistic or gaussian, got {self.kind!r}")

    @classmethod
    def from_params(cls, params: Params, weight: float = 1.0) -> "PerformanceModel":
        """The model of a round of ``weight`` under Elo-MMR ``params`` (Gaussian for Elo-MMchi)."""
        return cls(beta=float(params.beta(weight)), gamma=float(params.gamma(weight)), kind=params.variant)

    def describe(self, name: str, weight: float) -> dict[str, Any]:
        """What the API says about the model it predicted with."""
        return {"name": name, "kind": self.kind, "beta": self.beta, "gamma": self.gamma, "weight": weight}


@dataclass(frozen=True)
class RatedModel:
    """A rating-only model (:mod:`stream.engine.models`) with its parameters, for a round of ``weight``."""

    model: Model
    params: ModelParams
    weight: float = 1.0

    def __post_init__(self) -> None:
        if not (self.weight > 0 and math.isfinite(self.weight)):
            raise ValueError(f"weight must be finite and > 0, got {self.weight}")

    def odds(self, mu_a: ArrayLike, sigma_a: ArrayLike, mu_b: ArrayLike,
             sigma_b: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(P(a ahead of b), P(tie)) by the model's own ``pair_odds``, clipped to [0, 1]."""
        arrays = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (mu_a, sigma_a, mu_b, sigma_b)))
        ahead, tie = self.model.odds(*arrays, self.params, weight=self.weight)
        return np.clip(ahead, 0.0, 1.0), np.clip(tie, 0.0, 1.0)

    def describe(self, name: str, weight: float) -> dict[str, Any]:
        """What the API says about the model it predicted with."""
        return {"name": name, "weight": weight, "params": dataclasses.asdict(self.params)}


OutcomeModel = Union[PerformanceModel, RatedModel]
"""What the prediction functions take: Elo-MMR's performance model or a rating-only model."""


def outcome_model(cfg: LadderConfig, weight: float = 1.0) -> OutcomeModel:
    """The model of a ladder's next round of ``weight``: its rating-only model, or Elo-MMR's."""
    rating = cfg.rating_model
    if rating is None:
        return PerformanceModel.from_params(cfg.elo_mmr, weight)
    return RatedModel(rating, cfg.model_params, weight)


def normal_cdf(x: ArrayLike) -> NDArray[np.float64]:
    """Phi(x), the standard normal CDF."""
    out: NDArray[np.float64] = ndtr(np.asarray(x, dtype=np.float64))
    return out


def logistic_difference_cdf(x: ArrayLike) -> NDArray[np.float64]:
    """CDF of the difference of two independent standard logistic variables (module docstring)."""
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    small = a < SERIES_CUTOFF
    safe = np.where(small, 1.0, a)
    e = np.exp(-safe)
    upper = (-np.expm1(-safe) - safe * e) / np.expm1(-safe) ** 2  # F_D(|x|), stable for |x| >= cutoff
    upper = np.where(small, 0.5 + a / 6.0 - a**3 / 180.0, upper)
    out: NDArray[np.float64] = np.where(x >= 0, upper, 1.0 - upper)
    return out


def logistic_difference_pdf(x: ArrayLike) -> NDArray[np.float64]:
    """Density of the difference of two independent standard logistic variables (even)."""
    a = np.abs(np.asarray(x, dtype=np.float64))
    small = a < SERIES_CUTOFF
    safe = np.where(small, 1.0, a)
    e = np.exp(-safe)
    out = e * ((safe - 2.0) + (safe + 2.0) * e) / (-np.expm1(-safe)) ** 3
    return np.where(small, 1.0 / 6.0 - a**2 / 60.0, out)


def _trapezoid_weights(grid: NDArray[np.float64]) -> NDArray[np.float64]:
    w = np.full(grid.shape, grid[1] - grid[0])
    w[0] = w[-1] = w[0] / 2
    return w


_GAUSS_W = _trapezoid_weights(GAUSS_GRID) * np.exp(-0.5 * GAUSS_GRID**2) / math.sqrt(2 * math.pi)
_LOGDIFF_W = _trapezoid_weights(LOGDIFF_GRID) * logistic_difference_pdf(LOGDIFF_GRID)


def win_probability(mu_a: ArrayLike, sigma_a: ArrayLike, mu_b: ArrayLike, sigma_b: ArrayLike,
                    model: OutcomeModel) -> NDArray[np.float64]:
    """P(A finishes ahead of B) in the next round, elementwise over broadcast arrays."""
    if isinstance(model, RatedModel):
        return model.odds(mu_a, sigma_a, mu_b, sigma_b)[0]
    mu_a, sigma_a, mu_b, sigma_b = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64)
                                                         for v in (mu_a, sigma_a, mu_b, sigma_b)))
    m = mu_a - mu_b
    v = sigma_a**2 + sigma_b**2 + 2.0 * model.gamma**2
    if model.kind == "gaussian":
        return normal_cdf(m / np.sqrt(v + 2.0 * model.beta**2))
    s = model.beta * LOGISTIC_SCALE_PER_SD
    sd = np.sqrt(v)
    m_col, sd_col = m[..., None], sd[..., None]
    # Narrow skill uncertainty: average the logistic-difference CDF over the Gaussian.
    over_z = (logistic_difference_cdf((m_col + sd_col * GAUSS_GRID) / s) * _GAUSS_W).sum(axis=-1)
    # Wide skill uncertainty: average the normal CDF over the logistic difference.
    with np.errstate(divide="ignore", invalid="ignore"):
        over_d = (normal_cdf((m_col + s * LOGDIFF_GRID) / sd_col) * _LOGDIFF_W).sum(axis=-1)
    out: NDArray[np.float64] = np.where(sd <= s, over_z, over_d)
    return np.clip(out, 0.0, 1.0)


def pair_matrices(mu: ArrayLike, sigma: ArrayLike, model: OutcomeModel,
                  draw_margin: float = 0.0) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(A, T)``: ``A[i, j]`` = P(i finishes ahead of j), ``T[i, j]`` = P(i and j tie), diagonals 0;
    a rating-only model's own ties; Elo-MMR's with ``draw_margin`` d: performances within d draw,
    ``A[i, j] = P(P_i - P_j > d)`` and ``T = 1 - A - A^T``."""
    mu = np.asarray(mu, dtype=np.float64)
    sigma = np.asarray(sigma, dtype=np.float64)
    if not (draw_margin >= 0 and math.isfinite(draw_margin)):
        raise ValueError(f"draw_margin must be finite and >= 0, got {draw_margin}")
    if isinstance(model, RatedModel):
        ahead, tie = model.odds(mu[:, None], sigma[:, None], mu[None, :], sigma[None, :])  # fresh (np.clip)
    else:
        ahead = win_probability(mu[:, None] - draw_margin, sigma[:, None], mu[None, :], sigma[None, :], model)
        tie = np.clip(1.0 - ahead - ahead.T, 0.0, 1.0) if draw_margin > 0 else np.zeros_like(ahead)
    np.fill_diagonal(tie, 0.0)
    np.fill_diagonal(ahead, 0.0)
    return ahead, tie


def rank_distribution(mu: ArrayLike, sigma: ArrayLike, model: OutcomeModel, *,
                      samples: int = DEFAULT_SAMPLES, seed: int = 0) -> NDArray[np.float64]:
    """``R[i, r]`` = P(player i finishes at position r + 1), by seeded Monte Carlo from the model."""
    mu = np.asarray(mu, dtype=np.float64)
    sigma = np.asarray(sigma, dtype=np.float64)
    n = mu.size
    samples = max(1, min(samples, MAX_SAMPLE_CELLS // max(n, 1)))
    rng = np.random.default_rng(seed)
    if isinstance(model, RatedModel):
        performance = model.model.sample(mu, sigma, model.params, weight=model.weight, rng=rng, samples=samples)
    else:
        skill = mu + np.sqrt(sigma**2 + model.gamma**2) * rng.standard_normal((samples, n))
        if model.kind == "gaussian":
            noise = model.beta * rng.standard_normal((samples, n))
        else:
            noise = rng.logistic(0.0, model.beta * LOGISTIC_SCALE_PER_SD, (samples, n))
        performance = skill + noise
    order = np.argsort(-performance, axis=1)  # order[s, r] = player at position r
    counts = np.zeros((n, n), dtype=np.int64)
    np.add.at(counts, (order, np.broadcast_to(np.arange(n), order.shape)), 1)
    return counts / samples


def binary_entropy(p: ArrayLike) -> NDArray[np.float64]:
    """Entropy in bits of a two-outcome event with probability p."""
    p = np.clip(np.asarray(p, dtype=np.float64), 1e-300, 1.0)
    q = np.clip(1.0 - p, 1e-300, 1.0)
    bits: NDArray[np.float64] = -(p * np.log2(p) + q * np.log2(q))
    return bits


def lobby_quality(mu: ArrayLike, sigma: ArrayLike, model: OutcomeModel, ahead: NDArray[np.float64]) -> float:
    """The model's own match quality, else the mean pairwise outcome entropy of ``ahead`` (1: even)."""
    if isinstance(model, RatedModel) and model.model.quality is not None:
        return model.model.quality(np.asarray(mu, dtype=np.float64), np.asarray(sigma, dtype=np.float64),
                                   model.params)
    i, j = np.triu_indices(ahead.shape[0], k=1)
    return float(binary_entropy(ahead[i, j]).mean())


@dataclass(frozen=True)
class LobbyPrediction:
    """Everything the API shows for a proposed lobby, aligned with the input players."""

    expected_rank: NDArray[np.float64]
    expected_order: NDArray[np.int64]   # indices of the players, best expected rank first
    pairwise: NDArray[np.float64]
    rank_distribution: NDArray[np.float64]
    quality: float
    tie: NDArray[np.float64] | None = None
    """P(i and j tie), for models with draws (TrueSkill); None otherwise."""


def predict_lobby(mu: ArrayLike, sigma: ArrayLike, model: OutcomeModel, *, draw_margin: float = 0.0,
                  samples: int = DEFAULT_SAMPLES, seed: int = 0) -> LobbyPrediction:
    """Expected ranks and order (exact), rank distribution (exact for two players, else Monte Carlo)
    and match quality; ``draw_margin``: :func:`pair_matrices`."""
    pairwise, tie = pair_matrices(mu, sigma, model, draw_margin)
    if pairwise.shape[0] < 2:
        raise ValueError("a lobby needs at least 2 players")
    if pairwise.shape[0] == 2:  # exact: P(first) = P(ahead) + half of P(tie), ranks its mean to the last bit
        first = float(np.clip(pairwise[0, 1] + 0.5 * tie[0, 1], 0.0, 1.0))
        distribution = np.array([[first, 1.0 - first], [1.0 - first, first]])
        ranks = distribution @ np.array([1.0, 2.0])
    else:
        distribution = rank_distribution(mu, sigma, model, samples=samples, seed=seed)
        ranks = 1.0 + pairwise.sum(axis=0) + 0.5 * tie.sum(axis=0)
    return LobbyPrediction(
        expected_rank=ranks,
        expected_order=np.argsort(ranks, kind="stable"),
        pairwise=pairwise,
        rank_distribution=distribution,
        quality=lobby_quality(mu, sigma, model, pairwise),
        tie=tie if tie.any() else None,
    )


@dataclass(frozen=True)
class TeamPrediction:
    """A proposed match of teams: each team's belief (``teams.team_beliefs``), the lobby prediction
    over the teams, and per pair of teams P(the first wins by more than the draw margin) and P(draw)."""

    mu: NDArray[np.float64]
    sigma: NDArray[np.float64]
    lobby: LobbyPrediction
    win: NDArray[np.float64]
    draw: NDArray[np.float64]


def predict_teams(mu: ArrayLike, sigma: ArrayLike, entry: NDArray[np.int64], weights: ArrayLike,
                  model: PerformanceModel, *, draw_margin: float = 0.0, samples: int = DEFAULT_SAMPLES,
                  seed: int = 0) -> TeamPrediction:
    """Predict a match of teams (``entry[i]``: player i's, 0..k-1; ``weights``: shares), a team being one
    participant with its weighted-average member's belief; ``draw_margin``: :func:`pair_matrices`."""
    k = int(np.max(entry)) + 1
    mu_t, sigma_t = team_beliefs(np.asarray(mu, dtype=np.float64), np.asarray(sigma, dtype=np.float64),
                                 entry, np.asarray(weights, dtype=np.float64), k)
    lobby = predict_lobby(mu_t, sigma_t, model, samples=samples, seed=seed)
    win, draw = pair_matrices(mu_t, sigma_t, model, draw_margin)
    return TeamPrediction(mu=mu_t, sigma=sigma_t, lobby=lobby, win=win, draw=draw)
