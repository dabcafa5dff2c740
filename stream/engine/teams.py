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
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .diffusion import elapsed_days
from .params import Params
from .performance import phase_one
from .round import RoundUpdate, phase_two
from .rounds import RoundSpec, RoundsUpdate, previous_participations, rate_rounds
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
    return member_performances(batch.mu, batch.sigma, elapsed_days(batch.last_time, time), entry, entry_ranks,
                               weights, params, weight=weight, perf_ceiling=perf_ceiling)


def member_performances(
    mu: np.ndarray,
    sigma: np.ndarray,
    days: np.ndarray,
    entry: np.ndarray,
    entry_ranks: np.ndarray,
    weights: np.ndarray,
    params: Params,
    *,
    weight: float = 1.0,
    perf_ceiling: float = math.inf,
) -> np.ndarray:
    """:func:`team_performances` from the members' ``mu``, ``sigma`` and days since their last
    round (what the pipeline's phase one holds: columns, not a :class:`PlayerBatch`)."""
    k = entry_ranks.shape[0]
    average = _averager(entry, weights, k)
    mu_team, sigma_team = team_beliefs(mu, sigma, entry, weights, k)
    perf_team = phase_one(mu_team, sigma_team, average(days), entry_ranks, params, weight=weight,
                          perf_ceiling=perf_ceiling)
    single = np.bincount(entry, minlength=k) == 1
    surprise = np.where(single[entry], 0.0, mu - mu_team[entry])
    out: np.ndarray = perf_team[entry] + surprise
    return out


def _averager(entry: np.ndarray, weights: np.ndarray, k: int) -> Callable[[np.ndarray], np.ndarray]:
    """The weighted average over each of the ``k`` teams of a per-player value; a team of one
    takes its member's own value (exactly, not x w / w)."""
    total = np.bincount(entry, weights=weights, minlength=k)
    single = np.bincount(entry, minlength=k) == 1
    members = np.flatnonzero(single[entry])  # players who are a team of one

    def average(values: np.ndarray) -> np.ndarray:
        own = np.zeros(k)
        own[entry[members]] = values[members]
        mean = np.bincount(entry, weights=weights * values, minlength=k) / total
        out: np.ndarray = np.where(single, own, mean)
        return out

    return average


def team_beliefs(mu: np.ndarray, sigma: np.ndarray, entry: np.ndarray, weights: np.ndarray,
                 k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each of the ``k`` teams' belief, that of its weighted-average member (module docstring):
    ``mu_T = sum w_i mu_i / W_T``, ``sigma_T = sqrt(sum w_i sigma_i^2 / W_T)``; phase one rates a
    team with it, and predictions (``stream.engine.predict.predict_teams``) use it too."""
    average = _averager(entry, weights, k)
    single = np.bincount(entry, minlength=k) == 1
    return average(mu), np.where(single, average(sigma), np.sqrt(average(sigma**2)))


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


@dataclass(frozen=True, slots=True)
class TeamRoundSpec:
    """A round of teams or partial play for :func:`rate_rounds_with_teams`: ``players`` are row
    indices into the prior batch (distinct), ``ranks[i]`` player i's entry's rank, ``entry[i]`` his
    entry (index into ``entry_ranks``; individuals are entries of one) and ``weights[i]`` the share
    of the match he played."""

    players: np.ndarray
    ranks: np.ndarray
    entry: np.ndarray
    entry_ranks: np.ndarray
    weights: np.ndarray
    time: float
    weight: float = 1.0
    perf_ceiling: float = math.inf


def rate_rounds_with_teams(prior: PlayerBatch, rounds: Sequence[RoundSpec | TeamRoundSpec],
                           params: Params) -> RoundsUpdate:
    """:func:`stream.engine.rate_rounds` over rounds of which some are :class:`TeamRoundSpec`:
    each maximal run of individual rounds is one ``rate_rounds`` call (its waves), each team round
    is rated alone by :func:`rate_team_round` in its place, every call from the posteriors the
    previous ones left; the result has ``rate_rounds``' layout (``previous`` links a player's
    participations across the calls).  Without team rounds it is exactly ``rate_rounds``."""
    if not any(isinstance(r, TeamRoundSpec) for r in rounds):
        return rate_rounds(prior, rounds, params)
    n_rounds = len(rounds)
    sizes = np.fromiter((r.players.shape[0] for r in rounds), dtype=np.int64, count=n_rounds)
    offsets = np.zeros(n_rounds + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    total = int(offsets[-1])
    performance, mu, sigma = np.full(total, np.nan), np.full(total, np.nan), np.full(total, np.nan)
    rated = np.zeros(n_rounds, dtype=bool)
    current = prior.copy()
    k = 0
    while k < n_rounds:
        spec = rounds[k]
        if isinstance(spec, TeamRoundSpec):
            a, b = int(offsets[k]), int(offsets[k + 1])
            if spec.entry_ranks.shape[0] >= 2 and (spec.entry_ranks != spec.entry_ranks[0]).any():
                update = rate_team_round(current.take(spec.players), spec.entry, spec.entry_ranks, spec.weights,
                                         params, weight=spec.weight, perf_ceiling=spec.perf_ceiling, time=spec.time)
                current.put(spec.players, update.after)
                performance[a:b], mu[a:b], sigma[a:b] = update.performance, update.after.mu, update.after.sigma
                rated[k] = True
            k += 1
            continue
        end = k
        while end < n_rounds and not isinstance(rounds[end], TeamRoundSpec):
            end += 1
        run = rate_rounds(current, rounds[k:end], params)
        current = run.after
        a, b = int(offsets[k]), int(offsets[end])
        performance[a:b], mu[a:b], sigma[a:b] = run.performance, run.mu, run.sigma
        rated[k:end] = run.rated
        k = end
    rows = np.concatenate([r.players for r in rounds]).astype(np.int64)
    round_of = np.repeat(np.arange(n_rounds), sizes)
    return RoundsUpdate(after=current, offsets=offsets, performance=performance, mu=mu, sigma=sigma,
                        previous=previous_participations(rows, rated[round_of]), rated=rated)
