"""Compiled (numba) root solvers for the engine's many small independent equations.

Each equation is solved on its own by the same safeguarded Newton as
:func:`numerical.solve_bracketed` (:func:`newton_step` is its rule for one equation), in a
plain loop over its own terms: no Python cost per iteration, no padding to the longest equation.
Compiled on first use and cached on disk (numba ``cache=True``; see BENCHMARKS.md for the cold
start).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .numerical import BRACKET_RTOL, MAX_NEWTON_ITER, NEWTON_STEP_TOL
from .params import SOLVER_BOUNDS
from .state import TANH_MULTIPLIER

_LO, _HI = SOLVER_BOUNDS


@numba.njit(cache=True, error_model="numpy", inline="always")
def fast_tanh(z: float) -> float:
    """tanh from one exp of -2|z| (about twice as fast as libm's tanh; absolute error ~1e-16)."""
    e = math.exp(-2.0 * abs(z))
    t = (1.0 - e) / (1.0 + e)
    return t if z >= 0.0 else -t


@numba.njit(cache=True, error_model="numpy", inline="always")
def newton_step(lo: float, hi: float, x: float, s: float, sp: float, last: float, older: float,
                increasing: bool) -> tuple[float, float, float, float, float, bool]:
    """One step of :func:`numerical.solve_bracketed` for one equation: (lo, hi, next x, |last
    step|, |step before|, done) after evaluating (s, s') at x."""
    root_above = s < 0.0 if increasing else s > 0.0
    a = x if root_above else lo
    b = hi if root_above else x
    step = 0.0 if s == 0.0 else s / sp
    size = abs(step)
    converged = size <= NEWTON_STEP_TOL
    nxt = x - step
    ok = converged or (nxt > a and nxt < b and size <= 0.5 * older)
    width = b - a
    if not ok:
        nxt = a + 0.5 * width
    nxt = min(max(nxt, a), b)
    done = bool(converged or width <= BRACKET_RTOL * max(1.0, abs(nxt)))
    return a, b, nxt, size if ok else 0.5 * width, last, done


@numba.njit(cache=True, error_model="numpy")
def segment_roots(mu: np.ndarray, delta: np.ndarray, gid: np.ndarray, start: np.ndarray, eq_round: np.ndarray,
                  guess: np.ndarray, tie_mult: float) -> np.ndarray:
    """Logistic phase one of many small rounds: players sorted by (round, rank), ``gid`` their
    tie group (global, increasing), round r at ``start[r]:start[r + 1]``; one root per group.
    Q_g(x) = sum_j b_j - c_j [j better] + c_j [j worse], b_j = -c_j tanh((x - mu_j) c_j / 2)
    times ``tie_mult`` for j tied (module ``terms``)."""
    n_eq = guess.shape[0]
    out = np.empty(n_eq)
    for g in range(n_eq):
        r = eq_round[g]
        lo, hi = _LO, _HI
        x = min(max(guess[g], lo), hi)
        last = older = hi - lo
        for _ in range(MAX_NEWTON_ITER):
            value = 0.0
            slope = 0.0
            for j in range(start[r], start[r + 1]):
                c = TANH_MULTIPLIER / delta[j]
                half = 0.5 * c
                t = fast_tanh((x - mu[j]) * half)
                mult = 1.0
                if gid[j] < g:
                    value -= c
                elif gid[j] > g:
                    value += c
                else:
                    mult = tie_mult
                value -= mult * c * t
                slope -= mult * c * half * (1.0 - t * t)
            lo, hi, x, last, older, done = newton_step(lo, hi, x, value, slope, last, older, False)
            if done:
                break
        out[g] = x
    return out


@numba.njit(cache=True, error_model="numpy")
def robust_average_roots(p: np.ndarray, w_arg: np.ndarray, w_out: np.ndarray, n_factors: np.ndarray,
                         w0: np.ndarray, mu0: np.ndarray, guess: np.ndarray) -> np.ndarray:
    """Each row's zero of w0 (x - mu0) + sum_k w_out_k tanh((x - p_k) w_arg_k) over its own
    ``n_factors`` factors (Algorithm 3's second zero), from ``guess``."""
    n = guess.shape[0]
    out = np.empty(n)
    for i in range(n):
        lo, hi = _LO, _HI
        x = min(max(guess[i], lo), hi)
        last = older = hi - lo
        offset = -mu0[i] * w0[i]
        for _ in range(MAX_NEWTON_ITER):
            value = offset + w0[i] * x
            slope = w0[i]
            for k in range(n_factors[i]):
                t = fast_tanh((x - p[i, k]) * w_arg[i, k])
                value += w_out[i, k] * t
                slope += w_arg[i, k] * w_out[i, k] * (1.0 - t * t)
            lo, hi, x, last, older, done = newton_step(lo, hi, x, value, slope, last, older, True)
            if done:
                break
        out[i] = x
    return out


@numba.njit(cache=True, error_model="numpy")
def subsampled_roots(mu: np.ndarray, rank_pos: np.ndarray, mu_bucket: np.ndarray, by_window: np.ndarray,
                     beg: np.ndarray, end: np.ndarray, term_mu: np.ndarray, term_delta: np.ndarray,
                     term_size: np.ndarray, term_start: np.ndarray, first_rank: np.ndarray, keys: np.ndarray,
                     n_ranks: int, tie_mult: float) -> np.ndarray:
    """Logistic phase one against subsampled, bucketed opponents (module ``subsample``): player
    i's equation sums the merged terms ``beg[i]:end[i]``, each counting its members ranked better
    (loss), tied (tie) and worse (win) than i.  Players are visited in ``by_window`` order (mu
    bucket, then rank): a player starts from the root of the previous one in his bucket (same
    window, next rank: a close root), the first of a bucket from his own mu."""
    n = mu.shape[0]
    out = np.empty(n)
    width = 0
    for i in range(n):
        width = max(width, end[i] - beg[i])
    t_mu = np.empty(width)
    t_half = np.empty(width)
    t_weight = np.empty(width)
    previous_bucket = np.iinfo(np.int64).min
    previous_root = 0.0
    for pos in range(n):
        i = by_window[pos]
        r = rank_pos[i]
        constant = 0.0
        m = 0
        for t in range(beg[i], end[i]):
            if term_size[t] == 1:
                less = 1 if first_rank[t] < r else 0
                leq = 1 if first_rank[t] <= r else 0
            else:
                key = t * n_ranks + r
                less = np.searchsorted(keys, key, side="left") - term_start[t]
                leq = np.searchsorted(keys, key, side="right") - term_start[t]
            n_win = term_size[t] - leq
            c = TANH_MULTIPLIER / term_delta[t]
            t_mu[m] = term_mu[t]
            t_half[m] = 0.5 * c
            t_weight[m] = -(less + n_win + tie_mult * (leq - less)) * c  # loss, win: b -/+ c; tie: mult b
            constant += (n_win - less) * c
            m += 1
        lo, hi = _LO, _HI
        x = previous_root if mu_bucket[i] == previous_bucket else mu[i]
        x = min(max(x, lo), hi)
        last = older = hi - lo
        for _ in range(MAX_NEWTON_ITER):
            value = constant
            slope = 0.0
            for k in range(m):
                th = fast_tanh((x - t_mu[k]) * t_half[k])
                value += t_weight[k] * th
                slope += t_weight[k] * t_half[k] * (1.0 - th * th)
            lo, hi, x, last, older, done = newton_step(lo, hi, x, value, slope, last, older, False)
            if done:
                break
        out[i] = x
        previous_bucket, previous_root = mu_bucket[i], x
    return out


def warm_up() -> None:
    """Compile or load from the cache every kernel now (a first round otherwise pays it: seconds
    on the first run after installation, a fraction of a second after; see BENCHMARKS.md)."""
    one, two = np.ones(1), np.array([1500.0, 1400.0])
    ints = np.zeros(1, dtype=np.int64)
    segment_roots(two, np.full(2, 200.0), np.array([0, 1]), np.array([0, 2]), np.array([0, 0]), two, 2.0)
    robust_average_roots(np.ones((1, 1)), np.ones((1, 1)), np.ones((1, 1)), np.ones(1, dtype=np.int64), one, one, one)
    subsampled_roots(one, ints, ints, ints, ints, ints + 1, one, one * 200.0, ints + 1, ints, ints, ints, 1, 2.0)
