"""Elo-MMR for teams and partial play from the engine's own phases: a team is one participant in
phase one, its result shared by its members in phase two.  Team T's members i have prior
N(mu_i, sigma_i^2), days since their last round d_i and share of the match w_i in (0, 1], W_T = sum w_i.

Phase one (Algorithm 1 on teams): the team has the belief of its weighted-average member,

    mu_T = sum_i w_i mu_i / W_T,   sigma_T^2 = sum_i w_i sigma_i^2 / W_T,   d_T = sum_i w_i d_i / W_T

(gamma^2 is linear in the days, Eq. 9, so the team's drifted variance is the mean of its members').

Phase two (Algorithm 3 per member): p_i = p_T + (mu_i - mu_T), the team's surprise, with the noise
beta(w w_i) and drift gamma(w w_i, d_i) of a round of weight w * w_i: a small share moves little.
A team of one takes exactly the individual path (the bit-exact :func:`stream.engine.rate_round`);
monotonicity properties: tests/engine/test_elo_mmr_teams.py.
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
from .seasons import seasoned
from .rounds import RoundSpec, RoundsUpdate, _rated, flat_rounds, rate_flat, rate_rounds, wave_performances
from .state import PlayerBatch


def member_performances(mu: np.ndarray, sigma: np.ndarray, days: np.ndarray, entry: np.ndarray,
                        entry_ranks: np.ndarray, weights: np.ndarray, params: Params, *, weight: float = 1.0,
                        perf_ceiling: float = math.inf) -> np.ndarray:
    """Phase one of a team round: each member's p_i (module docstring); ``entry[i]`` player i's team."""
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
    """Weighted average per team of a per-player value (a team of one: its member's, exactly)."""
    total = np.bincount(entry, weights=weights, minlength=k)
    single = np.bincount(entry, minlength=k) == 1
    members = np.flatnonzero(single[entry])  # players who are a team of one

    def average(values: np.ndarray) -> np.ndarray:
        own = np.zeros(k)
        own[entry[members]] = values[members]
        mean = np.bincount(entry, weights=weights * values, minlength=k) / total
        return np.where(single, own, mean)

    return average


def team_beliefs(mu: np.ndarray, sigma: np.ndarray, entry: np.ndarray, weights: np.ndarray,
                 k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each team's belief, its weighted-average member's (module docstring)."""
    average = _averager(entry, weights, k)
    single = np.bincount(entry, minlength=k) == 1
    return average(mu), np.where(single, average(sigma), np.sqrt(average(sigma**2)))


def rate_team_round(batch: PlayerBatch, entry: np.ndarray, entry_ranks: np.ndarray, weights: np.ndarray,
                    params: Params, *, weight: float = 1.0, perf_ceiling: float = math.inf, time: float) -> RoundUpdate:
    """Rate one round of teams (individuals: teams of one); ``OutcomeFree`` as :func:`phase_one`."""
    prior = seasoned(batch, time, params)  # phase_two resets the same rows of ``batch`` alike
    perf = member_performances(prior.mu, prior.sigma, elapsed_days(batch.last_time, time), entry, entry_ranks,
                               weights, params, weight=weight, perf_ceiling=perf_ceiling)
    after = phase_two(batch, perf, params, weight=weight * weights, time=time)
    return RoundUpdate(after=after, performance=perf)


@dataclass(frozen=True, slots=True)
class TeamRoundSpec:
    """A round of teams or partial play: ``players`` row indices into the prior batch (distinct),
    ``ranks[i]`` player i's entry's rank, ``entry[i]`` his entry (index into ``entry_ranks``) and
    ``weights[i]`` his share of the match."""

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
    """:func:`stream.engine.rate_rounds` with :class:`TeamRoundSpec` among the rounds: each wave's entries
    in one phase one (:func:`team_beliefs`), its members in one phase two (weights ``round x share``)."""
    individual = [r for r in rounds if isinstance(r, RoundSpec)]
    if len(individual) == len(rounds):
        return rate_rounds(prior, individual, params)
    n_rounds = len(rounds)
    rows, ranks, offsets, times, weights, ceilings = flat_rounds(rounds)
    round_of = np.repeat(np.arange(n_rounds), np.diff(offsets))
    # every round as entries (an individual round's players are entries of one), numbered globally
    local = [r.entry if isinstance(r, TeamRoundSpec) else np.arange(r.players.shape[0]) for r in rounds]
    entry_ranks = [r.entry_ranks if isinstance(r, TeamRoundSpec) else r.ranks for r in rounds]
    n_entries = np.fromiter((e.shape[0] for e in entry_ranks), dtype=np.int64, count=n_rounds)
    entry_start = np.concatenate(([0], np.cumsum(n_entries)[:-1]))
    entry = np.concatenate(local).astype(np.int64) + entry_start[round_of]
    all_entry_ranks = np.concatenate(entry_ranks)
    entry_round = np.repeat(np.arange(n_rounds), n_entries)
    share = np.concatenate([r.weights if isinstance(r, TeamRoundSpec) else np.ones(r.players.shape[0])
                            for r in rounds]).astype(np.float64)
    entry_offsets = np.concatenate(([0], np.cumsum(n_entries)))
    rated = _rated(all_entry_ranks, entry_offsets, n_entries, params.draws_rate)

    def phase_one_of(part: np.ndarray, member_mu: np.ndarray, member_sigma: np.ndarray,
                     days: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        entries, at = np.unique(entry[part], return_inverse=True)  # the wave's entries, grouped by round
        k = entries.shape[0]
        mu_team, sigma_team = team_beliefs(member_mu, member_sigma, at, share[part], k)
        team_round = entry_round[entries]
        perf_team = wave_performances(mu_team, sigma_team, _averager(at, share[part], k)(days),
                                      all_entry_ranks[entries], team_round, weights, params)
        if params.variant == "logistic":
            perf_team = np.minimum(perf_team, ceilings[team_round])
        single = np.bincount(at, minlength=k) == 1
        perf = perf_team[at] + np.where(single[at], 0.0, member_mu - mu_team[at])
        return perf, weights[round_of[part]] * share[part]

    return rate_flat(prior, rows, ranks, offsets, times, weights, ceilings, params, rated=rated,
                     phase_one_of=phase_one_of)
