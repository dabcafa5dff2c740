"""Compiled (numba, cached on disk) root solvers for the engine's many small equations: each by
:func:`numerical.solve_bracketed`'s safeguarded Newton (:func:`newton_step`) over its own tanh
terms (:func:`tanh_sum`, whose own exp lets the sum run on SIMD lanes).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .factor_rows import gather_factors
from .numerical import BRACKET_RTOL, MAX_NEWTON_ITER, NEWTON_STEP_TOL
from .params import SOLVER_BOUNDS
from .state import TANH_MULTIPLIER

_LO, _HI = SOLVER_BOUNDS
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
"""ln 2 in two parts (fdlibm's): n ln 2 exact in the first for |n| < 2^20."""
_TAYLOR = tuple(1.0 / math.factorial(k) for k in range(13, -1, -1))
"""1/k! for k = 13..0: Horner's coefficients of exp(r) to r^13 (truncation < 1e-17 relative)."""
EXP_FLOOR = -40.0
"""exp below this is taken at it: tanh(20) is 1 to the last bit, and 1 - tanh^2 < 1e-17."""


@intrinsic
def _double_from_bits(typingctx, bits):  # type: ignore[no-untyped-def]
    """The float64 whose IEEE bits are the int64 ``bits`` (an LLVM bitcast, no memory)."""
    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


@numba.njit(cache=True, error_model="numpy", inline="always")
def exp_nonpositive(y: float) -> float:
    """exp(y) for y <= 0 (at least ``EXP_FLOOR``): y = n ln 2 + r, exp(r) by Taylor to r^13, times
    2^n from its bits; within ~2 ulp of libm's, and no call, so loops over it vectorise."""
    y = max(y, EXP_FLOOR)
    n = math.floor(y * _LOG2E + 0.5)
    r = (y - n * _LN2_HI) - n * _LN2_LO
    p = _TAYLOR[0]
    for c in _TAYLOR[1:]:
        p = p * r + c
    return p * _double_from_bits((np.int64(n) + 1023) << 52)  # type: ignore[call-arg]  # numba intrinsic


@numba.njit(cache=True, error_model="numpy", inline="always")
def fast_tanh(z: float) -> float:
    """tanh from one exp of -2|z| (absolute error ~2e-16; no libm call, so it vectorises)."""
    e = exp_nonpositive(-2.0 * abs(z))
    t = (1.0 - e) / (1.0 + e)
    return t if z >= 0.0 else -t


@numba.njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def tanh_sum(x: float, centre: np.ndarray, scale: np.ndarray, weight: np.ndarray, m: int) -> tuple[float, float, float]:
    """(S, S', S'') of S(x) = sum_k w_k tanh((x - c_k) a_k) over the first ``m`` terms:
    S' = sum_k w_k a_k (1 - t_k^2), S'' = -2 sum_k w_k a_k^2 t_k (1 - t_k^2) (reassociated: SIMD)."""
    value = 0.0
    slope = 0.0
    curve = 0.0
    for k in range(m):
        th = fast_tanh((x - centre[k]) * scale[k])
        d = weight[k] * scale[k] * (1.0 - th * th)
        value += weight[k] * th
        slope += d
        curve += d * scale[k] * th
    return value, slope, -2.0 * curve


@numba.njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})
def signed_sum(rank: np.ndarray, weight: np.ndarray, a: int, b: int, r: int) -> float:
    """sum over j in [a, b) of weight_j x sign(rank_j - r)."""
    total = 0.0
    for j in range(a, b):
        total += weight[j] * ((1.0 if rank[j] > r else 0.0) - (1.0 if rank[j] < r else 0.0))
    return total


@numba.njit(cache=True, error_model="numpy", inline="always")
def halley_step(s: float, sp: float, spp: float) -> float:
    """The step x - x' of Halley's method, s s' / (s'^2 - s s''/2) (cubic convergence), or
    Newton's s / s' where the curvature would more than double it (far from the root)."""
    if s == 0.0:
        return 0.0
    denominator = sp * sp - 0.5 * s * spp
    if not denominator > 0.5 * sp * sp:
        return s / sp
    return s * sp / denominator


@numba.njit(cache=True, error_model="numpy", inline="always")
def newton_step(lo: float, hi: float, x: float, s: float, step: float, last: float, older: float,
                increasing: bool) -> tuple[float, float, float, float, float, bool]:
    """One step of :func:`numerical.solve_bracketed` for one equation, given s at x and the
    proposed step x - x': (lo, hi, next x, |last step|, |step before|, done)."""
    root_above = s < 0.0 if increasing else s > 0.0
    a = x if root_above else lo
    b = hi if root_above else x
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
def solve_tanh_equation(constant: float, linear: float, centre: np.ndarray, scale: np.ndarray, weight: np.ndarray,
                        m: int, guess: float, increasing: bool) -> float:
    """Root of constant + linear x + sum_k w_k tanh((x - c_k) a_k) (first ``m`` terms, monotone in
    x) on the solver bracket, from ``guess``: :func:`newton_step` with :func:`halley_step`."""
    lo, hi = _LO, _HI
    x = min(max(guess, lo), hi)
    last = older = hi - lo
    for _ in range(MAX_NEWTON_ITER):
        value, slope, curve = tanh_sum(x, centre, scale, weight, m)
        value += constant + linear * x
        step = halley_step(value, linear + slope, curve)
        lo, hi, x, last, older, done = newton_step(lo, hi, x, value, step, last, older, increasing)
        if done:
            break
    return x


@numba.njit(cache=True, error_model="numpy")
def segment_roots(mu: np.ndarray, delta: np.ndarray, gid: np.ndarray, start: np.ndarray, eq_round: np.ndarray,
                  guess: np.ndarray, tie_mult: float) -> np.ndarray:
    """Logistic phase one of many small rounds (players by (round, rank), ``gid`` their global tie group,
    round r at ``start[r]:start[r + 1]``), a root per group: Q_g(x) = sum_j b_j - c_j [j better] + c_j
    [j worse], b_j = -c_j tanh((x - mu_j) c_j / 2) (x ``tie_mult`` for j tied; module ``terms``)."""
    n_eq = guess.shape[0]
    out = np.empty(n_eq)
    c = TANH_MULTIPLIER / delta
    half = 0.5 * c
    weight = np.empty((start[1:] - start[:-1]).max())
    for g in range(n_eq):
        r = eq_round[g]
        a, m = start[r], start[r + 1] - start[r]
        constant = 0.0  # better players count -c, worse +c; each player's tanh weight -c (x tie_mult if tied)
        for j in range(a, a + m):
            mult = 1.0
            if gid[j] < g:
                constant -= c[j]
            elif gid[j] > g:
                constant += c[j]
            else:
                mult = tie_mult
            weight[j - a] = -mult * c[j]
        out[g] = solve_tanh_equation(constant, 0.0, mu[a:], half[a:], weight, m, guess[g], False)
    return out


@numba.njit(cache=True, error_model="numpy")
def robust_average_roots(p: np.ndarray, w_arg: np.ndarray, w_out: np.ndarray, n_factors: np.ndarray,
                         w0: np.ndarray, mu0: np.ndarray, guess: np.ndarray) -> np.ndarray:
    """Each row's zero of w0 (x - mu0) + sum_k w_out_k tanh((x - p_k) w_arg_k) (Algorithm 3), from ``guess``."""
    n = guess.shape[0]
    out = np.empty(n)
    for i in range(n):
        out[i] = solve_tanh_equation(-mu0[i] * w0[i], w0[i], p[i], w_arg[i], w_out[i], n_factors[i], guess[i], True)
    return out


@numba.njit(cache=True, error_model="numpy", inline="always")
def diffuse_row(mu: np.ndarray, mu0: np.ndarray, w0: np.ndarray, w_arg: np.ndarray, w_out: np.ndarray,
                n_factors: np.ndarray, i: int, decay: float, transfer: float) -> None:
    """The pseudodiffusion (Algorithm 2, finite rho) of row ``i`` in place, given kappa (``decay``)
    and kappa^rho (``transfer``), summed over its own factors left to right: the same floats
    whatever the batch's padded width."""
    k = n_factors[i]
    w_logistic = 0.0
    for f in range(k):
        w_logistic += w_arg[i, f] * w_out[i, f] * 2.0 / TANH_MULTIPLIER**2  # state.factor_weight
    w_from_norm = transfer * w0[i]
    w_from_transfers = (1.0 - transfer) * (w0[i] + w_logistic)
    w_total = w_from_norm + w_from_transfers
    mu0[i] = (w_from_norm * mu0[i] + w_from_transfers * mu[i]) / w_total
    w0[i] = decay * w_total
    scale = transfer * decay
    for f in range(k):
        w_out[i, f] *= scale


@numba.njit(cache=True, error_model="numpy")
def diffuse_rows(mu: np.ndarray, mu0: np.ndarray, w0: np.ndarray, w_arg: np.ndarray, w_out: np.ndarray,
                 n_factors: np.ndarray, decay: np.ndarray, transfer: np.ndarray) -> None:
    """:func:`diffuse_row` on every row of a batch (row i of ``decay``/``transfer`` for row i)."""
    for i in range(mu.shape[0]):
        diffuse_row(mu, mu0, w0, w_arg, w_out, n_factors, i, decay[i], transfer[i])


@numba.njit(cache=True, error_model="numpy", inline="always")
def update_row(mu: np.ndarray, mu0: np.ndarray, w0: np.ndarray, p: np.ndarray, w_arg: np.ndarray, w_out: np.ndarray,
               n_factors: np.ndarray, i: int, performance: float, decay: float, transfer: float, beta: float,
               history_limit: int) -> None:
    """Phase two (finite rho) of row ``i`` in place: diffusion, history bound (0: none), the new
    factor and mu (``update``'s functions), over its own factors; the arrays must have room."""
    diffuse_row(mu, mu0, w0, w_arg, w_out, n_factors, i, decay, transfer)
    k = n_factors[i]
    centre, precision = mu0[i], w0[i]
    if history_limit > 0 and k >= history_limit:
        oldest = w_arg[i, 0] * w_out[i, 0] * 2.0 / TANH_MULTIPLIER**2  # state.factor_weight
        centre = (precision * centre + oldest * p[i, 0]) / (precision + oldest)
        precision = precision + oldest
        for f in range(k - 1):
            p[i, f], w_arg[i, f], w_out[i, f] = p[i, f + 1], w_arg[i, f + 1], w_out[i, f + 1]
        k -= 1
    w = TANH_MULTIPLIER / beta
    p[i, k], w_arg[i, k], w_out[i, k] = performance, 0.5 * w, w
    k += 1
    n_factors[i], mu0[i], w0[i] = k, centre, precision
    mu[i] = solve_tanh_equation(-centre * precision, precision, p[i], w_arg[i], w_out[i], k, mu[i], True)


@numba.njit(cache=True, error_model="numpy")
def logistic_update_rows(mu: np.ndarray, mu0: np.ndarray, w0: np.ndarray, p: np.ndarray, w_arg: np.ndarray,
                         w_out: np.ndarray, n_factors: np.ndarray, rows: np.ndarray, performance: np.ndarray,
                         decay: np.ndarray, transfer: np.ndarray, beta: np.ndarray, history_limit: int) -> None:
    """:func:`update_row` on ``rows`` (distinct), row q of the per-row arrays for ``rows[q]``."""
    for q in range(rows.shape[0]):
        update_row(mu, mu0, w0, p, w_arg, w_out, n_factors, rows[q], performance[q], decay[q], transfer[q], beta[q],
                   history_limit)


@numba.njit(cache=True, error_model="numpy")
def subsampled_roots(mu: np.ndarray, rank_pos: np.ndarray, mu_bucket: np.ndarray, by_window: np.ndarray,
                     beg: np.ndarray, end: np.ndarray, term_mu: np.ndarray, term_c: np.ndarray,
                     term_size: np.ndarray, term_start: np.ndarray, member_rank: np.ndarray,
                     tie_mult: float) -> np.ndarray:
    """Logistic phase one against subsampled, bucketed opponents (``subsample``): player i solves
    sum_t w_t tanh((x - mu_t) c_t / 2) + K over the merged terms ``beg[i]:end[i]``, with
    w_t = -(size_t + (tie_mult - 1) tied_t) c_t and K = sum_j c_j sign(rank_j - rank_i) over the window;
    by (mu bucket, rank): a bucket shares its window and starts from the previous root."""
    n = mu.shape[0]
    n_terms = term_mu.shape[0]
    out = np.empty(n)
    term_half = 0.5 * term_c
    member_c = np.empty(member_rank.shape[0])
    for t in range(n_terms):
        member_c[term_start[t]:term_start[t + 1]] = term_c[t]
    # the terms holding each rank's members (a tie group's terms), by counting sort
    n_ranks = member_rank.max() + 1
    rank_start = np.zeros(n_ranks + 1, dtype=np.int64)
    for j in range(member_rank.shape[0]):
        rank_start[member_rank[j] + 1] += 1
    for q in range(n_ranks):
        rank_start[q + 1] += rank_start[q]
    fill = rank_start[:-1].copy()
    term_by_rank = np.empty(member_rank.shape[0], dtype=np.int64)
    for t in range(n_terms):
        for j in range(term_start[t], term_start[t + 1]):
            term_by_rank[fill[member_rank[j]]] = t
            fill[member_rank[j]] += 1
    tied = np.zeros(n_terms, dtype=np.int64)
    weight = np.empty((end - beg).max())
    pos = 0
    while pos < n:
        first = by_window[pos]
        a, b = beg[first], end[first]
        m = b - a
        for t in range(a, b):
            weight[t - a] = -term_size[t] * term_c[t]
        x = mu[first]
        while pos < n and mu_bucket[by_window[pos]] == mu_bucket[first]:
            i = by_window[pos]
            r = rank_pos[i]
            constant = signed_sum(member_rank, member_c, term_start[a], term_start[b], r)
            for q in range(rank_start[r], rank_start[r + 1]):
                t = term_by_rank[q]
                if a <= t < b:
                    tied[t] += 1
                    weight[t - a] = -(term_size[t] + (tie_mult - 1.0) * tied[t]) * term_c[t]
            x = solve_tanh_equation(constant, 0.0, term_mu[a:], term_half[a:], weight, m, x, False)
            out[i] = x
            for q in range(rank_start[r], rank_start[r + 1]):
                t = term_by_rank[q]
                if a <= t < b:
                    tied[t] = 0
                    weight[t - a] = -term_size[t] * term_c[t]
            pos += 1
    return out


def warm_up() -> None:
    """Compile or load from the cache every kernel now (else the first round pays it; BENCHMARKS.md)."""
    one, two = np.ones(1), np.array([1500.0, 1400.0])
    ints = np.zeros(1, dtype=np.int64)
    segment_roots(two, np.full(2, 200.0), np.array([0, 1]), np.array([0, 2]), np.array([0, 0]), two, 2.0)
    robust_average_roots(np.ones((1, 1)), np.ones((1, 1)), np.ones((1, 1)), np.ones(1, dtype=np.int64), one, one, one)
    subsampled_roots(one, ints, ints, ints, ints, ints + 1, one, one * 0.01, ints + 1, np.array([0, 1]), ints, 2.0)
    diffuse_rows(one.copy(), one.copy(), one.copy(), np.zeros((1, 1)), np.zeros((1, 1)), ints.copy(), one, one)
    logistic_update_rows(one.copy(), one.copy(), one.copy(), np.zeros((1, 1)), np.zeros((1, 1)), np.zeros((1, 1)),
                         ints.copy(), ints, one, one, one, one * 200.0, 1)
    gather_factors((np.ones((1, 1)),), ints, ints + 1, 1)
