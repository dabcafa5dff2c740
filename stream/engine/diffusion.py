"""Skill drift between rounds: the pseudodiffusion of Section 4.2 (Algorithm 2), vectorised:
the authors' ``add_noise_best`` for finite rho (``kernels.diffuse_row``: a row's floats whatever its
batch) and ``add_noise_and_collapse`` for the memoryless variants (N(mu, sigma^2 + gamma^2)).
"""

from __future__ import annotations

import numpy as np

from .kernels import diffuse_rows
from .params import Params
from .state import PlayerBatch

SECS_PER_DAY = 86_400.0


def elapsed_days(last_time: np.ndarray, time: float | np.ndarray) -> np.ndarray:
    """Days since each player's last round; 0 for a newcomer (NaN), as the authors'."""
    last_time = np.asarray(last_time, dtype=float)
    days = (time - last_time) / SECS_PER_DAY
    return np.where(np.isnan(last_time), 0.0, days)


def gammas(params: Params, weight: float | np.ndarray, days: np.ndarray) -> np.ndarray:
    """Per-player drift ``sqrt(w L^2 + drift_per_day * days)`` (``Params.gamma``, vectorised)."""
    w = params.round_weight(weight)  # type: ignore[arg-type]
    return np.sqrt(w * params.sig_limit**2 + params.drift_per_day * np.asarray(days, dtype=float))


def drifted_sigma(sigma: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """sigma' = sqrt(sigma^2 + gamma^2) (the authors' ``Rating::with_noise``, via hypot)."""
    out: np.ndarray = np.hypot(sigma, gamma)
    return out


def diffuse(batch: PlayerBatch, gamma: np.ndarray, params: Params) -> PlayerBatch:
    """Algorithm 2 on every player (a new batch): with kappa = sigma^2/sigma'^2 and t = kappa^rho,
    w_G = t w0, w_L = (1 - t)(w0 + sum_k w_k), mu0 <- (w_G mu0 + w_L mu)/(w_G + w_L),
    w0 <- kappa (w_G + w_L), ``w_out *= t kappa``, sigma <- sigma'; mu is unchanged."""
    new_sigma = drifted_sigma(batch.sigma, gamma)
    if params.memoryless:  # collapse to N(mu, sigma'^2), no history
        empty = np.zeros((len(batch), 0))
        return PlayerBatch(batch.mu.copy(), new_sigma, batch.mu.copy(), new_sigma**-2, empty, empty.copy(),
                           empty.copy(), np.zeros(len(batch), dtype=np.int64), batch.rounds.copy(),
                           batch.last_time.copy())
    out = batch.copy()
    decay = (batch.sigma / new_sigma) ** 2
    diffuse_rows(out.mu, out.mu0, out.w0, out.w_arg, out.w_out, out.n_factors, decay, decay**params.rho)
    out.sigma = new_sigma
    return out


def sigma_at(sigma: np.ndarray, last_time: np.ndarray, time: float, params: Params) -> np.ndarray:
    """Each player's sigma after the drift of a weight-1 round at ``time`` (read side; nothing stored)."""
    days = np.maximum(elapsed_days(last_time, time), 0.0)
    return drifted_sigma(np.asarray(sigma, dtype=float), gammas(params, 1.0, days))
