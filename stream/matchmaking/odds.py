"""The ladder's own outcome model (``stream.engine.predict``, the ``/predict`` maths) for many
candidate matches at once.

Rating-only models (TrueSkill, Glicko, ...) have closed-form odds: they are called as they are.
Elo-MMR's logistic model is a quadrature per pair (``predict.win_probability``, ~0.2 ms a pair),
too slow for a tick over 100,000 tickets, so its win probability is read from a table of that
same function: with ``s = beta sqrt(3) / pi``, P(a ahead of b) depends only on ``x = m / s`` and
``y = sd / s`` (``m = mu_a - mu_b``, ``sd^2 = sigma_a^2 + sigma_b^2 + 2 gamma^2``), so one table
over (u, y), ``u = x / sqrt(y^2 + 2 pi^2 / 3)`` (the outcome's own spread), serves every ladder;
bilinear interpolation, |error| < 1e-3 (tests/matchmaking/test_odds.py), exact
``predict.win_probability`` beyond the table (y > 8). Gaussian Elo-MMchi is closed form already.

Quality is the model's own (TrueSkill's on a trueskill ladder), else the mean pairwise entropy
of "who finishes ahead" (``predict.binary_entropy``).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import NDArray

from stream.engine.trueskill import TrueSkillParams, quality_many
from stream.engine.predict import (LOGISTIC_SCALE_PER_SD, OutcomeModel, PerformanceModel, RatedModel,
                                   binary_entropy, win_probability)

Array = NDArray[np.float64]

U_MAX, U_STEP = 8.0, 0.05
Y_MAX, Y_STEP = 8.0, 0.2
OUTCOME_VAR = 2.0 * math.pi**2 / 3.0
"""Variance of the difference of two standard logistic performance noises."""


@functools.cache
def _table() -> Array:
    """P(ahead) on the (u, y) grid, from ``predict.win_probability`` itself (s = 1)."""
    u = np.arange(0.0, U_MAX + U_STEP / 2, U_STEP)
    y = np.arange(0.0, Y_MAX + Y_STEP / 2, Y_STEP)
    uu, yy = np.meshgrid(u, y, indexing="ij")
    x = uu * np.sqrt(yy**2 + OUTCOME_VAR)
    unit = PerformanceModel(beta=1.0 / LOGISTIC_SCALE_PER_SD, gamma=0.0)
    half = yy / math.sqrt(2.0)
    out: Array = win_probability(x, half, np.zeros_like(x), half, unit)
    return out


def warm_up() -> None:
    """Build the table now (about a second of CPU, once per process) rather than in the first tick."""
    _table()


def _logistic(m: Array, sd: Array, model: PerformanceModel) -> Array:
    s = model.beta * LOGISTIC_SCALE_PER_SD
    y = sd / s
    u = np.abs(m / s) / np.sqrt(y**2 + OUTCOME_VAR)
    table = _table()
    fu = np.minimum(u, U_MAX) / U_STEP
    fy = np.minimum(y, Y_MAX) / Y_STEP
    iu = np.minimum(fu.astype(np.int64), table.shape[0] - 2)
    iy = np.minimum(fy.astype(np.int64), table.shape[1] - 2)
    du, dy = fu - iu, fy - iy
    p = (table[iu, iy] * (1 - du) * (1 - dy) + table[iu + 1, iy] * du * (1 - dy)
         + table[iu, iy + 1] * (1 - du) * dy + table[iu + 1, iy + 1] * du * dy)
    p = np.where(m >= 0, p, 1.0 - p)
    out: Array = np.asarray(p, dtype=np.float64)
    beyond = y > Y_MAX
    if beyond.any():
        half = sd[beyond] / math.sqrt(2.0)
        out[beyond] = win_probability(m[beyond], half, np.zeros_like(half), half,
                                      PerformanceModel(model.beta, 0.0, model.kind))
    return out


def ahead(mu_a: Array, sigma_a: Array, mu_b: Array, sigma_b: Array, model: OutcomeModel) -> Array:
    """P(a finishes ahead of b) elementwise, the ``predict.win_probability`` of the ladder's model."""
    mu_a, sigma_a, mu_b, sigma_b = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64)
                                                         for v in (mu_a, sigma_a, mu_b, sigma_b)))
    if isinstance(model, RatedModel) or model.kind == "gaussian":
        return np.asarray(win_probability(mu_a, sigma_a, mu_b, sigma_b, model), dtype=np.float64)
    sd = np.sqrt(sigma_a**2 + sigma_b**2 + 2.0 * model.gamma**2)
    return _logistic(mu_a - mu_b, sd, model)


def lobby_odds(mu: Array, sigma: Array, model: OutcomeModel) -> tuple[Array, Array]:
    """For ``k`` lobbies of ``m`` participants (arrays (k, m)): each lobby's quality (k,) and each
    participant's mean P(ahead) of the others (k, m)."""
    m = mu.shape[1]
    i, j = np.triu_indices(m, k=1)
    first = np.zeros((i.size, m))
    first[np.arange(i.size), i] = 1.0
    second = np.zeros((j.size, m))
    second[np.arange(j.size), j] = 1.0
    p = ahead(mu[:, i], sigma[:, i], mu[:, j], sigma[:, j], model)
    if isinstance(model, RatedModel):  # ties: P(j ahead of i) is not 1 - P(i ahead of j)
        q = ahead(mu[:, j], sigma[:, j], mu[:, i], sigma[:, i], model)
    else:
        q = 1.0 - p
    beats: Array = (p @ first + q @ second) / (m - 1)
    quality_fn = model.model.quality if isinstance(model, RatedModel) else None
    if quality_fn is not None:
        assert isinstance(model, RatedModel)
        if isinstance(model.params, TrueSkillParams):  # every lobby in one stacked solve
            return np.asarray(quality_many(mu, sigma, model.params), dtype=np.float64), beats
        quality = np.array([quality_fn(mu[r], sigma[r], model.params) for r in range(mu.shape[0])], dtype=np.float64)
        return quality, beats
    entropy: Array = binary_entropy(p).mean(axis=1)
    return entropy, beats
