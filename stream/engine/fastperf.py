"""Exact phase one in O(N * nodes): piecewise Chebyshev interpolation of the group equations.

Sort players by rank; for tie group g,
    Q_g(x) = sum_{j in groups < g} loss_j(x) + sum_{j in groups > g} win_j(x) + sum_{j in g} tie_j(x).
At one point x, every player's three terms cost O(N), and a prefix sum of the losses plus a
suffix sum of the wins (over the rank order) gives Q_g(x) for ALL groups at once.

The roots are ordered (a better group's Q is pointwise larger, Theorem 5.2), so they all lie
between the roots of the worst and the best group, which are solved directly.  That range is cut
into pieces of half-width ``PIECE_HALF_WIDTH`` x delta_min; Q_g is tabulated at the
``NODES`` Chebyshev-Lobatto points of each piece (the endpoints are shared, so the signs at the
breakpoints say which piece holds each group's root), turned into a Chebyshev series, and every
group's root is found by the vectorised safeguarded Newton on its series inside its piece.

Accuracy: every term is analytic in the strip |Im x| < sqrt(3) delta_min (tanh poles; the
Gaussian ratios' nearest complex zeros of the cdf lie farther, ~2.8 delta), so with
half-width = delta_min the Bernstein ellipse parameter is ~3.7 and 33 nodes give ~1e-17 relative
interpolation error; tests check agreement with the direct O(N^2) evaluation to 1e-9.
Cost: (#pieces x NODES) evaluations of N terms, #pieces ~ root range / (2 delta_min), i.e. about
O(N log N) for a round of N players; memory O(N + G x NODES / #pieces).
"""

from __future__ import annotations

import math

import numpy as np

from .numerical import solve_newton
from .performance import GroupEquations, solve_groups_direct
from .ranking import TieGroups
from .state import TANH_MULTIPLIER
from .terms import logistic_terms

NODES = 33
"""Chebyshev-Lobatto nodes per piece (a polynomial of degree 32)."""
PIECE_HALF_WIDTH = 1.0
"""Half-width of a piece, in units of the smallest opponent delta."""


def _lobatto(m: int) -> np.ndarray:
    """Chebyshev points of the second kind on [-1, 1], descending (cos(j pi/(m-1)))."""
    return np.cos(np.pi * np.arange(m) / (m - 1))


def _values_to_coefficients(m: int) -> np.ndarray:
    """Matrix C with coeffs = values @ C.T (DCT-I on the Lobatto points)."""
    j = np.arange(m)
    c = np.cos(np.pi * np.outer(j, j) / (m - 1)) * (2.0 / (m - 1))
    c[:, 0] *= 0.5
    c[:, -1] *= 0.5
    c[0, :] *= 0.5
    c[-1, :] *= 0.5
    return c


def _derivative_coefficients(coef: np.ndarray) -> np.ndarray:
    """Chebyshev coefficients of d/dt of the series; ``coef`` is (m, series), one row per degree."""
    m = coef.shape[0]
    d = np.zeros_like(coef)
    for k in range(m - 2, -1, -1):
        d[k] = 2.0 * (k + 1) * coef[k + 1]
        if k + 2 < m:
            d[k] += d[k + 2]
    d[0] *= 0.5
    return d


def _clenshaw(coef: np.ndarray, idx: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Evaluate series ``idx`` of ``coef`` ((m, series), one row per degree) each at its own t."""
    b1 = np.zeros_like(t)
    b2 = np.zeros_like(t)
    for k in range(coef.shape[0] - 1, 0, -1):
        b1, b2 = 2.0 * t * b1 - b2 + coef[k, idx], b1
    return t * b1 - b2 + coef[0, idx]


class _AllGroups:
    """Q_g(x) for every group at one scalar x, via prefix/suffix sums over the rank order.

    Logistic shortcut: loss/win differ from b_j(x) = -c_j tanh((x - mu_j) c_j / 2) by -/+ c_j,
    so Q_g = S(x) + K_g + (tie_mult - 1) sum_{j in g} b_j(x) with one shared S = sum_j b_j and
    constants K_g = sum_{worse} c_j - sum_{better} c_j: one tanh pass and no prefix sums.
    """

    def __init__(self, eq: GroupEquations, groups: TieGroups):
        self.eq = eq
        self.start = groups.start
        self.end = groups.start + groups.size
        self.group_sorted = eq.group_sorted
        self.n_groups = groups.n_groups
        self.logistic = eq.terms is logistic_terms
        if self.logistic:
            self.c = TANH_MULTIPLIER / eq.delta
            self.half_c = 0.5 * self.c
            before = np.concatenate(([0.0], np.cumsum(self.c)))
            total = before[-1]
            self.k = (total - before[self.end]) - before[self.start]
            self.tie_extra = 0.0 if eq.split_ties else 1.0

    def at(self, x: float) -> np.ndarray:
        eq = self.eq
        if self.logistic:
            b = np.subtract(x, eq.mu)
            b *= self.half_c
            np.tanh(b, out=b)
            b *= self.c
            q = self.k - b.sum()
            if self.tie_extra:
                q = q - self._group_sums(b)
            return q
        loss, win, tie = eq.terms(x, eq.mu, eq.delta, eq.split_ties, derivative=False)
        before = np.concatenate(([0.0], np.cumsum(loss)))[self.start]
        after = np.concatenate((np.cumsum(win[::-1])[::-1], [0.0]))[self.end]
        return before + after + self._group_sums(tie)

    def _group_sums(self, values: np.ndarray) -> np.ndarray:
        """Sum of ``values`` (in rank order) over each tie group (bincount beats reduceat)."""
        return np.bincount(self.group_sorted, weights=values, minlength=self.n_groups)


def solve_groups_chebyshev(eq: GroupEquations, groups: TieGroups) -> np.ndarray:
    """Every tie group's root (best group first), exact to interpolation accuracy."""
    n_groups = groups.n_groups
    extremes = solve_groups_direct(eq, np.array([n_groups - 1, 0]))
    x_lo, x_hi = float(extremes[0]), float(extremes[1])
    roots = np.empty(n_groups)
    roots[0], roots[-1] = x_hi, x_lo
    if n_groups <= 2:
        return roots
    h = PIECE_HALF_WIDTH * float(eq.delta.min())
    n_pieces = max(1, math.ceil((x_hi - x_lo) / (2.0 * h)))
    edges = np.linspace(x_lo, x_hi, n_pieces + 1)
    allq = _AllGroups(eq, groups)
    inner = np.arange(1, n_groups - 1)

    # piece of each inner group: Q_g is decreasing, so count interior breakpoints with Q_g > 0
    edge_q = np.stack([allq.at(float(e))[inner] for e in edges[1:-1]]) if n_pieces > 1 else None
    piece = (edge_q > 0).sum(axis=0) if edge_q is not None else np.zeros(inner.shape[0], dtype=int)

    nodes = _lobatto(NODES)
    to_coef = _values_to_coefficients(NODES)
    for k in np.unique(piece):
        members = inner[piece == k]
        a, b = edges[k], edges[k + 1]
        mid, half = 0.5 * (a + b), 0.5 * (b - a)
        values = np.stack([allq.at(mid + half * t)[members] for t in nodes])  # (nodes, groups)
        coef = to_coef @ values
        dcoef = _derivative_coefficients(coef) / half

        def f(x: np.ndarray, idx: np.ndarray, coef=coef, dcoef=dcoef, mid=mid, half=half):
            t = (x - mid) / half
            return _clenshaw(coef, idx, t), _clenshaw(dcoef, idx, t)

        roots[members] = solve_newton(
            f, np.full(members.shape[0], a), np.full(members.shape[0], b), increasing=False
        )
    return roots
