"""One rated round: phase one (performances) then phase two (belief updates).

The pipeline calls :func:`phase_one` and :func:`phase_two` separately (phase two per partition,
on sub-batches); replay calls :func:`rate_round`.  Both paths run the same functions on the same
inputs and therefore produce the same floats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .diffusion import diffuse, elapsed_days, gammas
from .params import Params
from .performance import phase_one
from .state import PlayerBatch
from .update import update_beliefs


@dataclass(frozen=True, slots=True)
class RoundUpdate:
    """Result of :func:`rate_round`: the players' new states and their performances (aligned)."""

    after: PlayerBatch
    performance: np.ndarray


def phase_two(
    batch: PlayerBatch, performance: np.ndarray, params: Params, *, weight: float = 1.0, time: float
) -> PlayerBatch:
    """Diffusion (Algorithm 2, elapsed days from ``last_time`` to ``time``), belief update
    (Algorithm 3), history bound, sigma (Eq. 8), ``rounds += 1``, ``last_time = time``.
    Rows are independent: any sub-batch gives the same floats for its rows."""
    days = elapsed_days(batch.last_time, time)
    diffused = diffuse(batch, gammas(params, weight, days), params)
    after = update_beliefs(diffused, performance, params.beta(weight), params)
    after.rounds = batch.rounds + 1
    after.last_time = np.full(len(batch), float(time))
    return after


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
    perf = phase_one(
        batch.mu, batch.sigma, days, ranks, params, weight=weight, perf_ceiling=perf_ceiling
    )
    return RoundUpdate(after=phase_two(batch, perf, params, weight=weight, time=time), performance=perf)
