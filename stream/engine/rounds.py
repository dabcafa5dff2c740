"""Many rounds of one ladder per engine call: :func:`rate_rounds`.

A round joins the wave after the last wave holding any of its players (waves of player-disjoint
rounds, each player's rounds in order). A wave is one pass: phase one of its small exact rounds as
one segmented solve (``performance.solve_segments``), the others one by one; then phase two of all
its players in place (``round.update_rows``). Equals :func:`rate_round` one by one to rounding
(BENCHMARKS.md "Engine batch call").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .diffusion import elapsed_days
from .params import Params
from .performance import DIRECT_MAX_PLAYERS, opponent_deltas, phase_one, solve_segments
from .round import update_rows
from .seasons import reset_rows
from .state import PlayerBatch


@dataclass(frozen=True, slots=True)
class RoundSpec:
    """One round: ``players`` row indices into the prior batch (distinct), ``ranks[i]`` player i's rank."""

    players: np.ndarray
    ranks: np.ndarray
    time: float
    weight: float = 1.0
    perf_ceiling: float = math.inf


@dataclass(frozen=True, slots=True)
class RoundsUpdate:
    """Result of :func:`rate_rounds`: ``after`` the final states; per participation (round k at
    ``offsets[k]:offsets[k + 1]``) ``performance``, ``mu``/``sigma`` after it and ``previous`` (-1: none);
    ``rated[k]`` False for an outcome-free round (NaN participations)."""

    after: PlayerBatch
    offsets: np.ndarray
    performance: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray
    previous: np.ndarray
    rated: np.ndarray


def rate_rounds(prior: PlayerBatch, rounds: Sequence[RoundSpec], params: Params) -> RoundsUpdate:
    """Rate ``rounds`` in order against ``prior`` (not modified); see the module docstring."""
    return rate_flat(prior, *flat_rounds(rounds), params)


Flat = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def flat_rounds(rounds: Sequence[RoundSpec | Any]) -> Flat:
    """(rows, ranks, offsets, times, weights, ceilings) of round specs, as :func:`rate_flat` takes them."""
    sizes = np.fromiter((r.players.shape[0] for r in rounds), dtype=np.int64, count=len(rounds))
    offsets = np.zeros(len(rounds) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    rows = np.concatenate([r.players for r in rounds]).astype(np.int64) if rounds else np.zeros(0, np.int64)
    ranks = np.concatenate([r.ranks for r in rounds]) if rounds else np.zeros(0)
    times, weights, ceilings = (np.array([getattr(r, name) for r in rounds], dtype=float)
                                for name in ("time", "weight", "perf_ceiling"))
    return rows, ranks, offsets, times, weights, ceilings


WavePhaseOne = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
"""``(participations, mu, sigma, days) -> (performances, round weights)`` of a wave (``teams``)."""


def rate_flat(prior: PlayerBatch, rows: np.ndarray, ranks: np.ndarray, offsets: np.ndarray, times: np.ndarray,
              weights: np.ndarray, ceilings: np.ndarray, params: Params, *, rated: np.ndarray | None = None,
              phase_one_of: WavePhaseOne | None = None) -> RoundsUpdate:
    """:func:`rate_rounds` of rounds as flat arrays: round k is ``offsets[k]:offsets[k + 1]`` of
    ``rows`` (int64 rows of ``prior``) and ``ranks``; ``times``, ``weights``, ``ceilings`` per round;
    ``rated`` and a wave's phase one replaced by the caller's (Elo-MMR for teams)."""
    n_rounds = offsets.shape[0] - 1
    sizes = np.diff(offsets)
    total = int(offsets[-1])
    round_of = np.repeat(np.arange(n_rounds), sizes)
    rated = _rated(ranks, offsets, sizes, params.draws_rate) if rated is None else rated

    performance, mu, sigma = np.full(total, np.nan), np.full(total, np.nan), np.full(total, np.nan)
    previous = previous_participations(rows, rated[round_of])
    after = prior.copy(_history_need(prior, rows[rated[round_of]], params))  # copied at its final width at once
    wave = _waves(rows, offsets, rated, len(prior))

    for part in wave_parts(wave, round_of, rated):
        wave_rows = rows[part]
        rnd = round_of[part]
        reset_rows(after, wave_rows, times[rnd], params)  # a new season's soft reset, before the round reads them
        days = elapsed_days(after.last_time[wave_rows], times[rnd])
        if phase_one_of is not None:
            perf, row_weights = phase_one_of(part, after.mu[wave_rows], after.sigma[wave_rows], days)
        else:
            perf = wave_performances(after.mu[wave_rows], after.sigma[wave_rows], days, ranks[part], rnd, weights,
                                     params)
            if params.variant == "logistic":
                perf = np.minimum(perf, ceilings[rnd])
            row_weights = weights[rnd]
        update_rows(after, wave_rows, perf, params, row_weights, times[rnd])  # phase two, in place
        performance[part], mu[part], sigma[part] = perf, after.mu[wave_rows], after.sigma[wave_rows]
    return RoundsUpdate(after=after, offsets=offsets, performance=performance, mu=mu, sigma=sigma,
                        previous=previous, rated=rated)


def wave_parts(wave: np.ndarray, round_of: np.ndarray, rated: np.ndarray) -> Iterator[np.ndarray]:
    """The rated participations (indices), wave by wave (``wave``: each round's), in input order."""
    live = np.flatnonzero(rated[round_of])
    order = live[np.argsort(wave[round_of[live]], kind="stable")]
    bounds = np.searchsorted(wave[round_of[order]], np.arange(int(wave.max(initial=-1)) + 2))
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        yield order[a:b]


def _history_need(batch: PlayerBatch, rows: np.ndarray, params: Params) -> int:
    """The longest history the rated participations ``rows`` leave (0 for a memoryless model)."""
    if params.memoryless or rows.shape[0] == 0:
        return 0
    played = np.bincount(rows, minlength=len(batch))
    longest = batch.n_factors + played
    if params.history_limit is not None:
        longest = np.minimum(longest, np.maximum(batch.n_factors, params.history_limit))
    return int(longest[played > 0].max())


def _rated(ranks: np.ndarray, offsets: np.ndarray, sizes: np.ndarray, draws: bool) -> np.ndarray:
    """Rounds rated: at least two entries and two distinct ranks, or all tied where ``draws``."""
    n = ranks.shape[0]
    if n == 0:
        return np.zeros(sizes.shape[0], dtype=bool)
    if draws:
        return sizes >= 2
    differs = np.zeros(n, dtype=np.int64)
    differs[1:] = ranks[1:] != ranks[:-1]
    cum = np.concatenate(([0], np.cumsum(differs)))
    starts = np.minimum(offsets[:-1], n - 1)
    # a change of rank strictly inside the round: positions start+1 .. end-1
    inside = cum[offsets[1:]] - cum[np.minimum(starts + 1, n)]
    rated: np.ndarray = (sizes >= 2) & (inside > 0)
    return rated


def _waves(rows: np.ndarray, offsets: np.ndarray, rated: np.ndarray, n_players: int) -> np.ndarray:
    """Each round's wave (-1: not rated); plain lists: cheaper than numpy for small rounds."""
    last = [-1] * n_players
    wave = [-1] * rated.shape[0]
    players = rows.tolist()
    bounds = offsets.tolist()
    get = last.__getitem__
    for k in np.flatnonzero(rated).tolist():
        members = players[bounds[k]:bounds[k + 1]]
        w = max(map(get, members)) + 1
        for p in members:
            last[p] = w
        wave[k] = w
    return np.array(wave, dtype=np.int64)


def previous_participations(rows: np.ndarray, live: np.ndarray) -> np.ndarray:
    """Index of each participation's previous rated participation of the same player (-1)."""
    previous = np.full(rows.shape[0], -1, dtype=np.int64)
    idx = np.flatnonzero(live)
    by_player = idx[np.argsort(rows[idx], kind="stable")]
    same = rows[by_player[1:]] == rows[by_player[:-1]]
    previous[by_player[1:][same]] = by_player[:-1][same]
    return previous


def wave_performances(
    mu: np.ndarray, sigma: np.ndarray, days: np.ndarray, ranks: np.ndarray, rnd: np.ndarray, weights: np.ndarray,
    params: Params,
) -> np.ndarray:
    """Phase one of a wave's rounds (grouped, input order) from each participant's idle days."""
    n = mu.shape[0]
    first = np.ones(n, dtype=bool)  # a participation that starts its round (rounds are contiguous)
    np.not_equal(rnd[1:], rnd[:-1], out=first[1:])
    bounds = np.append(np.flatnonzero(first), n)
    sizes = np.diff(bounds)
    perf = np.empty(n)
    small = (sizes <= DIRECT_MAX_PLAYERS) if params.subsample_size is None else np.zeros(sizes.shape[0], bool)
    if small.any():
        part = np.repeat(small, sizes)
        _, delta = opponent_deltas(sigma[part], days[part], params, weights[rnd[part]])
        small_sizes = sizes[small]
        seg_bounds = np.zeros(small_sizes.shape[0] + 1, dtype=np.int64)
        np.cumsum(small_sizes, out=seg_bounds[1:])
        perf[part] = solve_segments(mu[part], delta, ranks[part], seg_bounds, params)
    for k in np.flatnonzero(~small).tolist():
        a, b = int(bounds[k]), int(bounds[k + 1])
        r = int(rnd[a])
        perf[a:b] = phase_one(mu[a:b], sigma[a:b], days[a:b], ranks[a:b], params,
                              weight=float(weights[r]))
    return perf
