"""Exact phase one of the Gaussian model (Elo-MMchi) for huge rounds: per-piece Chebyshev fits.

Players sorted by rank, tie group g:
    Q_g(x) = sum_{j in groups < g} loss_j(x) + sum_{j in groups > g} win_j(x) + sum_{j in g} tie_j(x)
has no shared part, so the range between the extreme groups' roots (Theorem 5.2) is cut into
pieces; the sign of Q_g at their edges says which piece holds each root (a contiguous range of
groups, :class:`GaussianGroups`), each piece's Q_g are fitted together, and each root is found by a
bracketed Newton on its series from the secant around its sign change.
"""

from __future__ import annotations

import math

import numpy as np

from .chebyshev import MIN_PIECE_HALF_WIDTH, clenshaw, derivative_coefficients, fit_adaptive, lobatto, root_tolerance
from .equations import GroupEquations, solve_extreme_groups
from .numerical import map_points, prefix_sums, solve_bracketed, worth_threads
from .ranking import TieGroups
from .terms import gaussian_ratios, gaussian_terms, gaussian_win_ratio

PIECE_HALF_WIDTH = 1.25
"""Initial pieces, in units of delta_min (measured: 17-33 nodes then reach the tolerance;
per-group series of degree <= 32 keep the Newton stage cheap)."""
NODE_LEVELS = (17, 33)
"""Nested node counts tried on each piece before it is halved."""
EDGE_BATCH = 4
"""Initial piece edges evaluated together (each yields one array over all groups)."""
MAX_PIECE_GROUPS = 1 << 17
"""Pieces holding more groups are halved before fitting: bounds the (nodes x groups) tables."""


Terms = tuple[np.ndarray, np.ndarray, np.ndarray]
Outside = tuple[Terms, Terms]
"""The players outside a range of groups as distinct (mu, delta, count/delta) terms: those better
(they contribute losses), those worse (wins)."""


class GaussianGroups:
    """Q_g(x) of a contiguous range of groups [g_a, g_b]: the players outside as weighted sums over
    their distinct (mu, delta) terms, those inside by prefix sums of losses and suffix sums of wins."""

    def __init__(self, eq: GroupEquations, groups: TieGroups):
        pairs, inverse = np.unique(eq.mu + 1j * eq.delta, return_inverse=True)
        self.term_mu = np.ascontiguousarray(pairs.real)
        self.term_delta = np.ascontiguousarray(pairs.imag)
        self.inverse = inverse.ravel()
        self.n_terms = pairs.shape[0]
        self.mu, self.delta = eq.mu, eq.delta
        self.start = groups.start
        self.end = groups.start + groups.size
        self.group = eq.group_sorted
        self.split_ties = eq.split_ties
        self.parallel = worth_threads(self.n_terms)
        self.scale = eq.mu.shape[0] / float(eq.delta.min())  # ~ sum of |terms|, for rounding

    def _distinct(self, players: slice) -> Terms:
        count = np.bincount(self.inverse[players], minlength=self.n_terms)
        used = np.flatnonzero(count)
        delta = self.term_delta[used]
        return self.term_mu[used], delta, count[used] / delta

    def outside(self, g_a: int, g_b: int) -> Outside:
        return self._distinct(slice(0, self.start[g_a])), self._distinct(slice(self.end[g_b], None))

    def values(self, x: float, g_a: int, g_b: int, out: Outside) -> np.ndarray:
        """Q_g(x) for g = g_a..g_b."""
        mu, delta, weight = out[0]
        far = -float((gaussian_win_ratio((mu - x) / delta) * weight).sum())
        mu, delta, weight = out[1]
        far += float((gaussian_win_ratio((x - mu) / delta) * weight).sum())
        p0, p1 = self.start[g_a], self.end[g_b]
        delta = self.delta[p0:p1]
        z = (x - self.mu[p0:p1]) / delta
        r_win, r_loss = gaussian_ratios(z)
        win, loss = r_win / delta, r_loss / delta
        tie = 0.5 * (win + loss) if self.split_ties else -z / delta
        prefix_loss = prefix_sums(loss)
        suffix_win = prefix_sums(win[::-1])[::-1]
        inside = (
            prefix_loss[self.start[g_a : g_b + 1] - p0]
            + suffix_win[self.end[g_a : g_b + 1] - p0]
            + np.bincount(self.group[p0:p1] - g_a, weights=tie, minlength=g_b - g_a + 1)
        )
        total: np.ndarray = inside + far
        return total

    def end_value_and_slope(self, x: float, g: int, out: Outside) -> tuple[float, float]:
        """(Q_g, Q_g') of the best (g = 0) or worst group; ``out`` = ``outside(g, g)``."""
        if g == 0:
            mu, delta, weight = out[1]
            z = (x - mu) / delta
            r = gaussian_win_ratio(z)
        else:
            mu, delta, weight = out[0]
            z = (x - mu) / delta
            r = -gaussian_win_ratio(-z)
        value = float((r * weight).sum())
        slope = float(((-z * r - r * r) * (weight / delta)).sum())
        members = slice(self.start[g], self.end[g])
        _, _, tie, _, _, tie_p = gaussian_terms(
            np.asarray(x), self.mu[members], self.delta[members], self.split_ties
        )
        return value + float(tie.sum()), slope + float(np.broadcast_to(tie_p, tie.shape).sum())


def solve_gaussian(eq: GroupEquations, groups: TieGroups) -> np.ndarray:
    """Every tie group's root (best group first)."""
    n_groups = groups.n_groups
    field = GaussianGroups(eq, groups)
    ends = np.array([n_groups - 1, 0])

    end_outside = [field.outside(int(g), int(g)) for g in ends]

    def f_ends(x: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        def one(i: int) -> tuple[float, float]:
            return field.end_value_and_slope(float(x[i]), int(ends[idx[i]]), end_outside[idx[i]])

        pairs = map_points(one, range(x.shape[0]), parallel=field.parallel)
        return np.array([v for v, _ in pairs]), np.array([d for _, d in pairs])

    roots, inner_left = solve_extreme_groups(f_ends, n_groups)
    if not inner_left:
        return roots
    x_hi, x_lo = float(roots[0]), float(roots[-1])
    inner = np.arange(1, n_groups - 1)

    # which initial piece holds each root: Q_g is decreasing, so count the edges where Q_g > 0
    half_width = PIECE_HALF_WIDTH * float(eq.delta.min())
    n_pieces = max(1, math.ceil((x_hi - x_lo) / (2.0 * half_width)))
    edges = np.linspace(x_lo, x_hi, n_pieces + 1)
    piece = np.zeros(inner.shape[0], dtype=np.int64)
    everyone = field.outside(1, n_groups - 2)
    interior = edges[1:-1].tolist()
    for batch in range(0, len(interior), EDGE_BATCH):  # a few (groups,) arrays alive at a time
        for q in map_points(lambda e: field.values(e, 1, n_groups - 2, everyone),
                            interior[batch : batch + EDGE_BATCH], parallel=field.parallel):
            piece += q > 0
    tolerance = root_tolerance(field.scale)
    min_width = 2.0 * MIN_PIECE_HALF_WIDTH * float(eq.delta.min())
    todo = [(edges[k], edges[k + 1], inner[piece == k]) for k in np.unique(piece)]
    while todo:
        a, b, members = todo.pop()
        g_a, g_b = int(members[0]), int(members[-1])
        cols = members - g_a
        outside = field.outside(g_a, g_b)

        def evaluate(xs: np.ndarray) -> np.ndarray:
            rows = map_points(lambda x: field.values(x, g_a, g_b, outside)[cols], xs.tolist(),
                              parallel=field.parallel)
            return np.stack(rows)

        def split() -> None:
            """Halve the piece; the sign of Q_g at the midpoint says which half holds each root."""
            mid = 0.5 * (a + b)
            right = evaluate(np.array([mid]))[0] > 0
            halves = ((a, mid, members[~right]), (mid, b, members[right]))
            todo.extend(half for half in halves if half[2].shape[0])

        if members.shape[0] > MAX_PIECE_GROUPS and b - a > min_width:
            split()  # bounds the (nodes x groups) tables' memory
            continue
        coef, values, ok = fit_adaptive(evaluate, a, b, tolerance, NODE_LEVELS)
        if not ok and b - a > min_width:
            split()
            continue
        roots[members] = _solve_on_series(coef, values, a, b)
    return roots


def _solve_on_series(coef: np.ndarray, values: np.ndarray, a: float, b: float) -> np.ndarray:
    """Root of each column's decreasing series on [a, b], from the secant where its ``values`` change sign."""
    m = coef.shape[0]
    mid, half = 0.5 * (a + b), 0.5 * (b - a)
    x_nodes = mid + half * lobatto(m)  # descending
    k = np.arange(coef.shape[1])
    n_pos = (values > 0).sum(axis=0)  # nodes left of the root (smallest x last)
    j = np.clip(m - n_pos - 1, 0, m - 2)  # the root lies in [x_nodes[j + 1], x_nodes[j]]
    lo, hi = x_nodes[j + 1], x_nodes[j]
    v_lo, v_hi = values[j + 1, k], values[j, k]
    with np.errstate(divide="ignore", invalid="ignore"):
        guess = lo + v_lo * (hi - lo) / (v_lo - v_hi)
    guess = np.where(np.isfinite(guess), guess, 0.5 * (lo + hi))
    dcoef = derivative_coefficients(coef) / half

    def f(x: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t = np.clip((x - mid) / half, -1.0, 1.0)
        return clenshaw(coef, t, idx), clenshaw(dcoef, t, idx)

    return solve_bracketed(f, lo, hi, guess, increasing=False)
