"""Compiled :func:`rounds.rate_flat` for the service's maths: every round small (at most
``DIRECT_MAX_PLAYERS`` players), exact phase one, the logistic model with finite rho (:func:`supports`).

One compiled loop rates the rounds in input order, each on its own: its players' drift and
opponent widths (``performance.opponent_deltas``), its tie groups' equations one at a time
(``kernels.segment_roots``), the performance ceiling, then phase two of its players in place
(``round.update_rows``: ``kernels.update_row`` and the sigma of Eq. 8).  It gives the floats of
the wave-by-wave numpy path (``rounds.rate_waves``): a round reads only its players' states,
which only their earlier rounds wrote, and every float comes from the same operations in the
same order (correctly rounded ones, and the same compiled tanh sums).  A call costs one
dispatch where the wave path makes tens of numpy calls per wave: for duels and lobbies that
fixed cost, not the solves, was most of phase one's engine time (bench/rounds_batch.py).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .diffusion import SECS_PER_DAY
from . import kernels
from .kernels import solve_tanh_equation, tie_group_terms, update_row
from .params import Params
from .performance import DIRECT_MAX_PLAYERS
from .state import TANH_MULTIPLIER, PlayerBatch

EXACT_RHO = (0.0, 0.5, 1.0, 2.0)
"""The rho for which numpy's ``decay ** rho`` (``round.update_rows``) is a correctly rounded
operation (its scalar fast paths: 1, multiply, sqrt) and so what the compiled loop computes;
any other rho takes the wave path (numpy's SIMD ``pow`` is not libm's)."""

RatedRounds = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                    np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def supports(params: Params, offsets: np.ndarray) -> bool:
    """Whether :func:`rate_compiled` rates these rounds (see the module docstring)."""
    return (params.variant == "logistic" and not params.memoryless and params.subsample_size is None
            and params.rho in EXACT_RHO and offsets.shape[0] > 1
            and int((offsets[1:] - offsets[:-1]).max()) <= DIRECT_MAX_PLAYERS)


def rate_compiled(prior: PlayerBatch, rows: np.ndarray, ranks: np.ndarray, offsets: np.ndarray, times: np.ndarray,
                  weights: np.ndarray, ceilings: np.ndarray,
                  params: Params) -> tuple[PlayerBatch, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``rounds.rate_flat`` for rounds :func:`supports` accepts: (after, performance, mu, sigma,
    previous, rated) as ``RoundsUpdate`` holds them."""
    ranks = np.asarray(ranks)
    ranks = ranks.astype(np.int64, copy=False) if ranks.dtype.kind in "iub" else ranks.astype(float, copy=False)
    p, w_arg, w_out = (_plain(a) for a in (prior.p, prior.w_arg, prior.w_out))
    (mu, sigma, mu0, w0, p, w_arg, w_out, n_factors, played, last_time, performance, mu_after, sigma_after, previous,
     rated) = rate_batch(
        prior.mu, prior.sigma, prior.mu0, prior.w0, p, w_arg, w_out, np.asarray(prior.n_factors, dtype=np.int64),
        np.asarray(prior.rounds, dtype=np.int64), prior.last_time, np.asarray(rows, dtype=np.int64), ranks,
        np.asarray(offsets, dtype=np.int64), np.asarray(times, dtype=float), np.asarray(weights, dtype=float),
        np.asarray(ceilings, dtype=float), params.weight_limit, params.sig_limit**2, params.drift_per_day,
        float(params.rho), 1.0 if params.split_ties else 2.0, params.history_limit or 0)
    after = PlayerBatch(mu=mu, sigma=sigma, mu0=mu0, w0=w0, p=p, w_arg=w_arg, w_out=w_out, n_factors=n_factors,
                        rounds=played, last_time=last_time)
    return after, performance, mu_after, sigma_after, previous, rated


def _plain(a: np.ndarray) -> np.ndarray:
    """``a`` as a writable C-contiguous float array (a copy only if it is not one): the type
    :func:`rate_batch` is compiled for at warm-up (a read-only view, e.g. ``unpack_batch``'s
    factors when nobody has any, would compile it again at the first batch)."""
    if a.dtype == np.float64 and a.flags.c_contiguous and a.flags.writeable:
        return a
    return np.array(a, dtype=float, order="C")


@numba.njit(cache=True, error_model="numpy")
def rate_batch(mu: np.ndarray, sigma: np.ndarray, mu0: np.ndarray, w0: np.ndarray, p: np.ndarray, w_arg: np.ndarray,
               w_out: np.ndarray, n_factors: np.ndarray, rounds: np.ndarray, last_time: np.ndarray, rows: np.ndarray,
               ranks: np.ndarray, offsets: np.ndarray, times: np.ndarray, weights: np.ndarray, ceilings: np.ndarray,
               weight_limit: float, sig_limit2: float, drift_per_day: float, rho: float, tie_mult: float,
               history_limit: int) -> RatedRounds:
    """The loop of :func:`rate_compiled` on the prior's arrays (not modified): the posterior
    batch's arrays (factor arrays as wide as ``PlayerBatch.copy`` would make them for the
    longest history left), then per participation performance, mu, sigma, previous
    participation (-1: none), and per round whether it was rated."""
    n_players, n_rounds, total = mu.shape[0], offsets.shape[0] - 1, rows.shape[0]
    rated = np.zeros(n_rounds, dtype=np.bool_)
    played = np.zeros(n_players, dtype=np.int64)
    largest = 0
    for k in range(n_rounds):
        a, b = offsets[k], offsets[k + 1]
        largest = max(largest, b - a)
        for j in range(a + 1, b):
            if ranks[j] != ranks[a]:
                rated[k] = True
                break
        if rated[k]:
            for j in range(a, b):
                played[rows[j]] += 1
    # the posterior batch: PlayerBatch.copy to the width rounds._history_need gives
    width = p.shape[1]
    for i in range(n_players):
        if played[i] > 0:
            longest = n_factors[i] + played[i]
            if history_limit > 0:
                longest = min(longest, max(n_factors[i], history_limit))
            width = max(width, longest)
    new_p, new_w_arg, new_w_out = np.zeros((n_players, width)), np.zeros((n_players, width)), np.zeros((n_players, width))
    for i in range(n_players):
        for f in range(n_factors[i]):
            new_p[i, f], new_w_arg[i, f], new_w_out[i, f] = p[i, f], w_arg[i, f], w_out[i, f]
    mu, sigma, mu0, w0 = mu.copy(), sigma.copy(), mu0.copy(), w0.copy()
    n_factors, rounds, last_time = n_factors.copy(), rounds.copy(), last_time.copy()

    performance, mu_after, sigma_after = np.full(total, np.nan), np.full(total, np.nan), np.full(total, np.nan)
    previous = np.full(total, -1, dtype=np.int64)
    last_part = np.full(n_players, -1, dtype=np.int64)
    order = np.empty(largest, dtype=np.int64)
    gid = np.empty(largest, dtype=np.int64)
    gamma, drifted = np.empty(largest), np.empty(largest)
    mu_s, c, half, weight = np.empty(largest), np.empty(largest), np.empty(largest), np.empty(largest)
    guess, roots = np.empty(largest), np.empty(largest)
    for k in range(n_rounds):
        if not rated[k]:
            continue
        a, m, t = offsets[k], offsets[k + 1] - offsets[k], times[k]
        w = weights[k] * weight_limit  # params.round_weight
        beta = math.sqrt((1.0 + 1.0 / w) * sig_limit2 + drift_per_day / w)  # params.performance_noise
        for q in range(m):  # performance.opponent_deltas, players in the round's order
            i = rows[a + q]
            days = 0.0 if math.isnan(last_time[i]) else (t - last_time[i]) / SECS_PER_DAY  # elapsed_days
            gamma[q] = math.sqrt(w * sig_limit2 + drift_per_day * days)
            drifted[q] = np.hypot(sigma[i], gamma[q])
        for q in range(m):  # stable insertion sort by rank
            s = q
            while s > 0 and ranks[a + order[s - 1]] > ranks[a + q]:
                order[s] = order[s - 1]
                s -= 1
            order[s] = q
        # tie groups in rank order and each one's start, mu the sum over its members (np.bincount)
        n_groups = 0
        for s in range(m):
            q = order[s]
            if s == 0 or ranks[a + q] != ranks[a + order[s - 1]]:
                guess[n_groups] = 0.0
                roots[n_groups] = 0.0  # member count, for the mean
                n_groups += 1
            gid[s] = n_groups - 1
            mu_s[s] = mu[rows[a + q]]
            c[s] = TANH_MULTIPLIER / np.hypot(drifted[q], beta)
            half[s] = 0.5 * c[s]
            guess[n_groups - 1] += mu_s[s]
            roots[n_groups - 1] += 1.0
        for g in range(n_groups):  # kernels.segment_roots
            start = guess[g] / roots[g]
            constant = tie_group_terms(c, gid, 0, m, g, tie_mult, weight)
            roots[g] = solve_tanh_equation(constant, 0.0, mu_s, half, weight, m, start, False)
        ceiling = ceilings[k]
        for s in range(m):  # phase two (round.update_rows), in the sorted order: rows are distinct
            q = order[s]
            j = a + q
            i = rows[j]
            perf = roots[gid[s]]
            perf = ceiling if ceiling < perf else perf  # np.minimum
            new_sigma = drifted[q]
            ratio = sigma[i] / new_sigma
            decay = ratio * ratio
            if rho == 1.0:  # numpy's decay ** rho for EXACT_RHO
                transfer = decay
            elif rho == 0.0:
                transfer = 1.0
            elif rho == 2.0:
                transfer = decay * decay
            else:
                transfer = math.sqrt(decay)
            update_row(mu, mu0, w0, new_p, new_w_arg, new_w_out, n_factors, i, perf, decay, transfer, beta,
                       history_limit)
            sigma[i] = 1.0 / math.sqrt(1.0 / (new_sigma * new_sigma) + 1.0 / (beta * beta))
            rounds[i] += 1
            last_time[i] = t
            performance[j], mu_after[j], sigma_after[j] = perf, mu[i], sigma[i]
            previous[j] = last_part[i]
            last_part[i] = j
    return (mu, sigma, mu0, w0, new_p, new_w_arg, new_w_out, n_factors, rounds, last_time, performance, mu_after,
            sigma_after, previous, rated)


def warm_up() -> None:
    """``kernels.warm_up``, and this module's loop: every compiled function loaded before a first round."""
    kernels.warm_up()
    one, two, pair = np.ones(1), np.array([1500.0, 1400.0]), np.array([0, 1])
    rate_batch(two, two, two, two, np.zeros((2, 0)), np.zeros((2, 0)), np.zeros((2, 0)), pair * 0, pair * 0,
               np.full(2, np.nan), pair, pair, np.array([0, 2]), one, one, one, 0.2, 6400.0, 0.0, 1.0, 2.0, 0)
