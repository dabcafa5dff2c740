"""Elo-MMR for teams and partial play, composed of the engine's own phases (``phase_one``,
``phase_two``): a team is rated as one participant in phase one, and its result is shared by its
members in phase two.

Notation: team T has members i with prior belief N(mu_i, sigma_i^2), days since their last round
d_i and share of the match played w_i in (0, 1]; W_T = sum_i w_i.

Phase one (Algorithm 1 on teams).  Each team is one participant of the round, ranked by its rank,
with the belief of its weighted average member:

    mu_T      = sum_i w_i mu_i / W_T
    sigma_T^2 = sum_i w_i sigma_i^2 / W_T,    d_T = sum_i w_i d_i / W_T

so the team's drifted variance sigma_T^2 + gamma^2(d_T) (Eq. 9: gamma^2 is linear in the days)
is the weighted mean of its members' drifted variances, and its opponent width is
delta_T = sqrt(sigma_T'^2 + beta^2).  ``phase_one`` solves the team performances p_T exactly as
it solves players' (Eq. 3-5: one root of Q per tie group of teams).

Phase two (Algorithm 3 per member).  Every member is credited the team's surprise: his
performance is

    p_i = p_T + (mu_i - mu_T),

his own expectation moved by as much as the team beat its expectation; the update is shared by
weight: the member's factor is appended with the noise of a round of weight w * w_i (w the
round's weight), beta(w w_i) = sqrt(L^2 (1 + 1/(w w_i)) + drift_per_day / (w w_i)), and his drift
gamma(w w_i, d_i) is that of such a round.  A player who played a small share of the match is a
noisy observation and moves little; weight 1 is the individual update.

Properties (tests/engine/test_elo_mmr_teams.py): p_T is non-increasing in the team's rank, so is p_i, and
a member's new rating is non-decreasing in p_i (Theorem 1), so a better team rank never lowers a
member's rating; a smaller w_i moves a player less; a team of one (any w_i = 1) takes exactly the
individual path (the averages are not computed for a team of one: the member's own values are
used), so a round of individuals equals :func:`stream.engine.rate_round` to the bit.
"""

from __future__ import annotations

import math

import numpy as np

from .diffusion import elapsed_days
from .params import Params
from .performance import phase_one
from .round import RoundUpdate, phase_two
from .state import PlayerBatch


def team_performances(
    batch: PlayerBatch,
    entry: np.ndarray,
    entry_ranks: np.ndarray,
    weights: np.ndarray,
    params: Params,
    *,
    weight: float = 1.0,
    perf_ceiling: float = math.inf,
    time: float,
) -> np.ndarray:
    """Phase one: each member's performance p_i (aligned with ``batch``; see the module docstring).
    ``entry[i]`` is player i's team (index into ``entry_ranks``), ``weights`` the shares played."""
    k = entry_ranks.shape[0]
    days = elapsed_days(batch.last_time, time)
    total = np.bincount(entry, weights=weights, minlength=k)
    size = np.bincount(entry, minlength=k)
    single = size == 1

    members = np.flatnonzero(single[entry])  # players who are a team of one

    def own(values: np.ndarray) -> np.ndarray:
        """Each team of one's member's value (the average of one, exactly)."""
        out = np.zeros(k)
        out[entry[members]] = values[members]
        return out

    def average(values: np.ndarray) -> np.ndarray:
        mean = np.bincount(entry, weights=weights * values, minlength=k) / total
        return np.where(single, own(values), mean)

    mu_team = average(batch.mu)
    sigma_team = np.where(single, own(batch.sigma), np.sqrt(average(batch.sigma**2)))
    perf_team = phase_one(mu_team, sigma_team, average(days), entry_ranks, params, weight=weight,
                          perf_ceiling=perf_ceiling)
    surprise = np.where(single[entry], 0.0, batch.mu - mu_team[entry])
    out: np.ndarray = perf_team[entry] + surprise
    return out


def rate_team_round(
    batch: PlayerBatch,
    entry: np.ndarray,
    entry_ranks: np.ndarray,
    weights: np.ndarray,
    params: Params,
    *,
    weight: float = 1.0,
    perf_ceiling: float = math.inf,
    time: float,
) -> RoundUpdate:
    """Rate one round of teams (individuals are teams of one); raises ``OutcomeFree`` when all
    teams tie or there is one team."""
    perf = team_performances(batch, entry, entry_ranks, weights, params, weight=weight,
                             perf_ceiling=perf_ceiling, time=time)
    after = phase_two(batch, perf, params, weight=weight * weights, time=time)
    return RoundUpdate(after=after, performance=perf)
