"""One rated round: phase one (performances) then phase two (belief updates); the pipeline calls
them apart (phase two per partition, on sub-batches), replay through :func:`rate_round`: the same floats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .diffusion import diffuse, drifted_sigma, elapsed_days, gammas
from .kernels import logistic_update_rows
from .params import Params, performance_noise
from .performance import phase_one
from .seasons import reset_rows, seasoned
from .state import PlayerBatch
from .update import update_beliefs


@dataclass(frozen=True, slots=True)
class RoundUpdate:
    """Result of :func:`rate_round`: the players' new states and their performances (aligned)."""

    after: PlayerBatch
    performance: np.ndarray


def phase_two(
    batch: PlayerBatch,
    performance: np.ndarray,
    params: Params,
    *,
    weight: float | np.ndarray = 1.0,
    time: float | np.ndarray,
    in_place: bool = False,
) -> PlayerBatch:
    """A season's soft reset, diffusion (Algorithm 2), belief update (Algorithm 3), history bound,
    sigma (Eq. 8), ``rounds += 1``, ``last_time = time``; ``weight``/``time`` per round or row, rows
    independent (any sub-batch: the same floats); a copy unless ``in_place``."""
    n = len(batch)
    after = batch if in_place else batch.copy(width=0 if params.memoryless else history_width(batch.n_factors,
                                                                                             params))
    times = _per_row(time, n)
    reset_rows(after, np.arange(n), times, params)  # a new season's soft reset (stream.engine.seasons)
    update_rows(after, np.arange(n), performance, params, _per_row(weight, n), times)
    return after


def _per_row(value: float | np.ndarray, n: int) -> np.ndarray:
    """``value`` as n floats, one per row (read only; an array of them as it is)."""
    if isinstance(value, np.ndarray) and value.dtype == np.float64 and value.shape == (n,):
        return value
    return np.broadcast_to(np.asarray(value, dtype=float), (n,))


def update_rows(batch: PlayerBatch, rows: np.ndarray, performance: np.ndarray, params: Params, weights: np.ndarray,
                times: np.ndarray) -> None:
    """:func:`phase_two` of ``rows`` (distinct) of ``batch`` in place, row q of the per-row arrays for
    ``rows[q]``: finite rho compiled (``kernels.logistic_update_rows``), memoryless models by numpy."""
    days = elapsed_days(batch.last_time[rows], times)
    gamma, beta = gammas(params, weights, days), performance_noise(params, weights)  # Eq. 9, Params.beta per row
    sigma = batch.sigma[rows]
    new_sigma = drifted_sigma(sigma, gamma)
    if params.memoryless:
        sub = batch.take(rows)
        after = update_beliefs(diffuse(sub, gamma, params), performance, beta, params)
        batch.put(rows, after)
    else:
        need = history_width(batch.n_factors[rows], params)
        if need > batch.p.shape[1]:
            batch.widen(need)
        decay = (sigma / new_sigma) ** 2
        transfer = decay**params.rho
        logistic_update_rows(batch.mu, batch.mu0, batch.w0, batch.p, batch.w_arg, batch.w_out, batch.n_factors,
                             np.asarray(rows, dtype=np.int64), np.asarray(performance, dtype=float), decay, transfer,
                             np.asarray(beta, dtype=float), params.history_limit or 0)
    # Eq. 8 by correctly rounded operations (numpy's SIMD pow differs from libm's by an ulp): the
    # same floats on any CPU
    batch.sigma[rows] = 1.0 / np.sqrt(1.0 / (new_sigma * new_sigma) + 1.0 / (beta * beta))
    batch.rounds[rows] += 1
    batch.last_time[rows] = times


def history_width(n_factors: np.ndarray, params: Params) -> int:
    """Factor entries the longest of these histories needs after one more round."""
    kept = n_factors if params.history_limit is None else np.minimum(n_factors, params.history_limit - 1)
    return int(kept.max(initial=-1)) + 1


def rate_round(
    batch: PlayerBatch,
    ranks: np.ndarray,
    params: Params,
    *,
    weight: float = 1.0,
    perf_ceiling: float = math.inf,
    time: float,
) -> RoundUpdate:
    """Rate one round; ``ranks[i]`` is player i's rank (ties equal).  Raises ``OutcomeFree``."""
    days = elapsed_days(batch.last_time, time)
    prior = seasoned(batch, time, params)  # phase_two resets the same rows of ``batch`` alike
    perf = phase_one(
        prior.mu, prior.sigma, days, ranks, params, weight=weight, perf_ceiling=perf_ceiling
    )
    return RoundUpdate(after=phase_two(batch, perf, params, weight=weight, time=time), performance=perf)
