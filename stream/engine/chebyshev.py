"""Chebyshev interpolation for ``fastperf_*``: nested Lobatto nodes (2^j + 1: raising the degree
reuses every value), coefficients, Clenshaw, and an adaptive fit accepted when the series' tail
is below a tolerance (coefficients decay like rho^-k in the Bernstein ellipse: ATAP Thm 8.1).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np

TAIL_FRACTION = 4
"""The tail checked for convergence: the last 1/TAIL_FRACTION of the coefficients."""
ROOT_TOL = 1e-11
"""Rating points: a fit is accepted when its tail, divided by the equation's slope, is below
this (the error it can cause on a root)."""
NOISE_ULPS = 256.0
"""...or when its tail is below this many ulps of the equation's scale (sum of |terms|):
rounding, which more nodes cannot remove."""
MIN_PIECE_HALF_WIDTH = 1e-3
"""Pieces are not halved below this (units of delta_min); their fit is then used as it is."""


@cache
def lobatto(m: int) -> np.ndarray:
    """Chebyshev points of the second kind on [-1, 1], descending (cos(j pi/(m-1)))."""
    return np.cos(np.pi * np.arange(m) / (m - 1))


@cache
def values_to_coefficients(m: int) -> np.ndarray:
    """Matrix C with coeffs = C @ values (DCT-I on the Lobatto points)."""
    j = np.arange(m)
    c = np.cos(np.pi * np.outer(j, j) / (m - 1)) * (2.0 / (m - 1))
    c[:, 0] *= 0.5
    c[:, -1] *= 0.5
    c[0, :] *= 0.5
    c[-1, :] *= 0.5
    return c


def derivative_coefficients(coef: np.ndarray) -> np.ndarray:
    """Chebyshev coefficients of d/dt of the series; ``coef`` is (m, series), one row per degree."""
    m = coef.shape[0]
    d = np.zeros_like(coef)
    for k in range(m - 2, -1, -1):
        d[k] = 2.0 * (k + 1) * coef[k + 1]
        if k + 2 < m:
            d[k] += d[k + 2]
    d[0] *= 0.5
    return d


def clenshaw(coef: np.ndarray, t: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
    """Chebyshev series ``coef`` (m, series) at t in [-1, 1], point i on series ``idx[i]`` (or ``coef`` (m,))."""
    b1 = np.zeros_like(t)
    b2 = np.zeros_like(t)
    two_t = 2.0 * t
    for k in range(coef.shape[0] - 1, 0, -1):
        ck = coef[k] if idx is None else coef[k, idx]
        b0 = two_t * b1
        b0 -= b2
        b0 += ck
        b1, b2 = b0, b1
    c0 = coef[0] if idx is None else coef[0, idx]
    out: np.ndarray = t * b1 - b2 + c0
    return out


def root_tolerance(scale: float) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``tolerance`` for :func:`fit_adaptive` of monotone equations whose terms sum to ~scale in
    absolute value: ROOT_TOL x the smallest |secant slope| between nodes, at least rounding."""
    floor = NOISE_ULPS * np.finfo(float).eps * scale

    def tolerance(xs: np.ndarray, values: np.ndarray) -> np.ndarray:
        slope = (np.abs(np.diff(values, axis=0)) / np.abs(np.diff(xs))[:, None]).min(axis=0)
        tol: np.ndarray = np.maximum(ROOT_TOL * slope, floor)
        return tol

    return tolerance


def fit_adaptive(
    evaluate: Callable[[np.ndarray], np.ndarray],
    a: float,
    b: float,
    tolerance: Callable[[np.ndarray, np.ndarray], np.ndarray],
    levels: tuple[int, ...],
) -> tuple[np.ndarray, np.ndarray, bool]:
    """(coefficients (m, series), values at the m Lobatto points (descending x), converged) of the
    functions ``evaluate(xs)`` tabulates on [a, b], raising the node count through ``levels`` until
    every series' coefficient tail is within ``tolerance(xs, values)``."""
    mid, half = 0.5 * (a + b), 0.5 * (b - a)
    values = None
    for m in levels:
        xs = mid + half * lobatto(m)
        if values is None:
            values = evaluate(xs)
        else:  # the previous level's nodes are every other node of this level
            fresh = evaluate(xs[1::2])
            merged = np.empty((m, values.shape[1]))
            merged[0::2], merged[1::2] = values, fresh
            values = merged
        coef = values_to_coefficients(m) @ values
        tail = np.abs(coef[m - m // TAIL_FRACTION :]).sum(axis=0)
        if np.all(tail <= tolerance(xs, values)):
            return coef, values, True
    assert values is not None  # levels is never empty
    return coef, values, False
