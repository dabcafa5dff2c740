"""Exact phase one for huge rounds: Chebyshev interpolation of the group equations.

Sort players by rank; for tie group g,
    Q_g(x) = sum_{j in groups < g} loss_j(x) + sum_{j in groups > g} win_j(x) + sum_{j in g} tie_j(x).
The roots are ordered (a better group's Q is pointwise larger, Theorem 5.2), so all of them lie
between the roots of the worst and the best group, [x_lo, x_hi], which are solved first.

Logistic model (module ``terms``): loss/win differ from b_j(x) = -c_j tanh((x - mu_j) c_j/2) by
-/+ c_j, so  Q_g = S(x) + K_g + e sum_{j in g} b_j(x)  with ONE function shared by all groups,
S = sum_j b_j, constants K_g = sum_{worse} c_j - sum_{better} c_j, and e = 1 (0 with split ties).
Players with identical (mu, delta) (e.g. all newcomers) merge into one term of S with a
multiplicity.  S is fitted on [x_lo, x_hi] by adaptive piecewise Chebyshev interpolation
(``chebyshev.fit_adaptive``; every evaluation of S is one O(#distinct terms) pass, run on a
small thread pool), re-expanded into short low-degree pieces (cheap to evaluate), and every
group's root is found by a safeguarded Newton on S + K_g + its own tie terms, evaluated exactly.

Gaussian model (Elo-MMchi): no such shortcut, so ``GaussianPieces`` tabulates Q_g of the groups
whose roots lie in each piece (prefix sums of losses, suffix sums of wins over the rank order),
fits them adaptively and solves on the series.

Accuracy: the fits are refined until their Chebyshev tails, divided by the equations' slope,
are below ``ROOT_TOL`` (the terms are analytic in the strip |Im x| < sqrt(3) delta_min for tanh,
~2.8 delta_min for the Gaussian ratios, so the tails decay geometrically); tests check agreement
with the direct O(N^2) evaluation to 1e-9.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .chebyshev import clenshaw, derivative_coefficients, fit_adaptive, lobatto, values_to_coefficients
from .numerical import map_points, prefix_sums, solve_bracketed
from .params import SOLVER_BOUNDS
from .performance import GroupEquations
from .ranking import TieGroups
from .state import TANH_MULTIPLIER
from .terms import gaussian_ratios, gaussian_terms, gaussian_win_ratio, logistic_terms

ROOT_TOL = 1e-11
"""Rating points: target effect of a fit's interpolation error on a root (tail / slope)."""
NOISE_ULPS = 256.0
"""Fits need not beat this many ulps of the equation's scale (the sum of |terms|): rounding."""
STRIP_HALF_WIDTH = math.sqrt(3.0)
"""The logistic terms are analytic for |Im x| < sqrt(3) delta (poles of tanh), in delta units."""
PIECE_HALF_WIDTH = 6.0
"""Initial fit pieces, in units of delta_min: the Bernstein ellipse of [-6, 6] delta_min through
the strip has rho ~ 1.33, so 129 nodes reach ~1e-16 even in the worst case (fewer usually do)."""
MIN_PIECE_HALF_WIDTH = 1e-3
"""Pieces are not split below this (delta_min units); their fit is then used as it is."""
LOGISTIC_NODE_LEVELS = (17, 33, 65, 129)
"""Nested node counts tried on each piece of S before it is halved."""
SUB_NODES = 12
"""Nodes of the short pieces S is re-expanded into for the Newton stage (degree 11)."""
SUB_RHO = 30.0
"""Their half-width is strip / SUB_RHO: error ~ SUB_RHO^-(SUB_NODES-1) ~ 6e-17 relative."""
PARALLEL_MIN_TERMS = 20_000
"""Below this many terms, evaluations run on the calling thread (thread overhead dominates)."""


def _secant_slope(xs: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Smallest |secant slope| between consecutive nodes, per series (the equations are monotone)."""
    return (np.abs(np.diff(values, axis=0)) / np.abs(np.diff(xs))[:, None]).min(axis=0)


class LogisticSum:
    """S(x) = sum_j -c_j tanh((x - mu_j) c_j/2) over all players, identical (mu, delta) merged."""

    def __init__(self, mu: np.ndarray, delta: np.ndarray):
        pairs, counts = np.unique(mu + 1j * delta, return_counts=True)  # sorts by (mu, delta)
        self.mu = np.ascontiguousarray(pairs.real)
        c = TANH_MULTIPLIER / np.ascontiguousarray(pairs.imag)
        self.half_c = 0.5 * c
        self.weight = counts * c
        self.scale = float(self.weight.sum())
        self.parallel = self.mu.shape[0] >= PARALLEL_MIN_TERMS

    def value(self, x: float) -> float:
        z = np.subtract(x, self.mu)
        z *= self.half_c
        np.tanh(z, out=z)
        z *= self.weight
        return -float(z.sum())

    def value_and_slope(self, x: float) -> tuple[float, float]:
        z = np.subtract(x, self.mu)
        z *= self.half_c
        with np.errstate(over="ignore"):
            sech2 = np.cosh(z) ** -2.0  # not 1 - tanh^2, which underflows already at |z| ~ 19
        np.tanh(z, out=z)
        z *= self.weight
        sech2 *= self.weight
        sech2 *= self.half_c
        return -float(z.sum()), -float(sech2.sum())

    def values(self, xs: np.ndarray) -> np.ndarray:
        return np.array(map_points(self.value, xs.tolist(), parallel=self.parallel))


class TieTerms:
    """e sum_{j in g} b_j(x_g) and its derivative, for every group at its own point x_g."""

    def __init__(self, eq: GroupEquations, n_groups: int, extra: float):
        self.mu = eq.mu
        self.c = TANH_MULTIPLIER / eq.delta
        self.group = eq.group_sorted
        self.n_groups = n_groups
        self.extra = extra

    def at(self, x_of_group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        z = x_of_group[self.group] - self.mu
        z *= 0.5 * self.c
        with np.errstate(over="ignore"):
            slope = -0.5 * self.extra * self.c**2 * np.cosh(z) ** -2.0
        value = -self.extra * self.c * np.tanh(z)
        return (
            np.bincount(self.group, weights=value, minlength=self.n_groups),
            np.bincount(self.group, weights=slope, minlength=self.n_groups),
        )


class PiecewiseSeries:
    """A function as Chebyshev series on consecutive pieces [edges[k], edges[k+1]]."""

    def __init__(self, edges: np.ndarray, coef: np.ndarray):
        self.edges = edges
        self.mid = 0.5 * (edges[1:] + edges[:-1])
        self.half = 0.5 * (edges[1:] - edges[:-1])
        self.coef = coef  # (degree + 1, pieces)
        self.dcoef = derivative_coefficients(coef) / self.half

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(value, derivative) at x (clamped to the covered range)."""
        k = np.clip(np.searchsorted(self.edges, x, side="right") - 1, 0, self.mid.shape[0] - 1)
        t = np.clip((x - self.mid[k]) / self.half[k], -1.0, 1.0)
        return clenshaw(self.coef, t, k), clenshaw(self.dcoef, t, k)


def _fit_pieces(evaluate, a: float, b: float, half_width: float, tolerance) -> list[tuple[float, float, np.ndarray]]:
    """Adaptive piecewise fit of [a, b]: pieces of ``half_width`` refined by degree, then halved
    while a piece's tail stays above tolerance.  Returns (a_k, b_k, coefficients) in order."""
    n = max(1, math.ceil((b - a) / (2.0 * half_width)))
    todo = [(float(lo), float(hi)) for lo, hi in zip(np.linspace(a, b, n + 1)[:-1], np.linspace(a, b, n + 1)[1:])]
    done = []
    min_width = 2.0 * MIN_PIECE_HALF_WIDTH * half_width / PIECE_HALF_WIDTH
    while todo:
        lo, hi = todo.pop()
        coef, _, ok = fit_adaptive(evaluate, lo, hi, tolerance, LOGISTIC_NODE_LEVELS)
        if ok or hi - lo <= min_width:
            done.append((lo, hi, coef))
        else:
            m = 0.5 * (lo + hi)
            todo += [(lo, m), (m, hi)]
    return sorted(done, key=lambda piece: piece[0])


def _reexpand(pieces: list[tuple[float, float, np.ndarray]], sub_half: float) -> PiecewiseSeries:
    """The fitted pieces re-expanded into short pieces of degree SUB_NODES - 1 (exact to
    rounding: each is analytic well beyond its Bernstein ellipse), for fast evaluation."""
    edges, coefs = [], []
    nodes = lobatto(SUB_NODES)
    to_coef = values_to_coefficients(SUB_NODES)
    for lo, hi, coef in pieces:
        n = max(1, math.ceil((hi - lo) / (2.0 * sub_half)))
        sub_edges = np.linspace(lo, hi, n + 1)
        mid, half = 0.5 * (sub_edges[1:] + sub_edges[:-1]), 0.5 * (sub_edges[1:] - sub_edges[:-1])
        x = mid[None, :] + half[None, :] * nodes[:, None]  # (SUB_NODES, n)
        t = np.clip((x - 0.5 * (lo + hi)) / (0.5 * (hi - lo)), -1.0, 1.0)
        values = clenshaw(coef[:, 0], t.ravel()).reshape(x.shape)
        coefs.append(to_coef @ values)
        edges.append(sub_edges[:-1])
    edges.append(np.array([pieces[-1][1]]))
    return PiecewiseSeries(np.concatenate(edges), np.concatenate(coefs, axis=1))


def _solve_logistic(eq: GroupEquations, groups: TieGroups) -> np.ndarray:
    n_groups = groups.n_groups
    total = LogisticSum(eq.mu, eq.delta)
    c = TANH_MULTIPLIER / eq.delta
    before = prefix_sums(c)  # K_g = sum_{worse} c_j - sum_{better} c_j
    k = (before[-1] - before[groups.start + groups.size]) - before[groups.start]
    extra = 0.0 if eq.split_ties else 1.0
    ties = TieTerms(eq, n_groups, extra)

    # the extreme groups, directly: S costs one pass over the distinct terms
    ends = np.array([n_groups - 1, 0])

    def f_ends(x: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s = np.array(map_points(total.value_and_slope, x.tolist(), parallel=total.parallel))
        g = ends[idx]
        value, slope = s[:, 0] + k[g], s[:, 1]
        if extra:
            for i, gi in enumerate(g):
                members = slice(groups.start[gi], groups.start[gi] + groups.size[gi])
                z = (x[i] - eq.mu[members]) * 0.5 * c[members]
                with np.errstate(over="ignore"):
                    value[i] -= float((c[members] * np.tanh(z)).sum())
                    slope[i] -= float((0.5 * c[members] ** 2 * np.cosh(z) ** -2.0).sum())
        return value, slope

    x_lo, x_hi = solve_bracketed(
        f_ends, np.full(2, SOLVER_BOUNDS[0]), np.full(2, SOLVER_BOUNDS[1]),
        np.full(2, 0.5 * sum(SOLVER_BOUNDS)), increasing=False,
    )
    roots = np.empty(n_groups)
    roots[0], roots[-1] = x_hi, x_lo
    if n_groups <= 2:
        return roots
    if not x_hi > x_lo:
        roots[1:-1] = x_lo
        return roots

    delta_min = float(eq.delta.min())
    floor = NOISE_ULPS * np.finfo(float).eps * total.scale

    def tolerance(xs: np.ndarray, values: np.ndarray) -> np.ndarray:
        return np.maximum(ROOT_TOL * _secant_slope(xs, values), floor)

    pieces = _fit_pieces(
        lambda xs: total.values(xs)[:, None], x_lo, x_hi, PIECE_HALF_WIDTH * delta_min, tolerance
    )
    series = _reexpand(pieces, STRIP_HALF_WIDTH * delta_min / SUB_RHO)

    # initial guesses: solve S(x) = -K_g on a table of S (decreasing) at the short pieces' edges
    table_s, _ = series(series.edges)
    guess = np.interp(-k, table_s[::-1], series.edges[::-1])
    x_all = guess.copy()
    inner = np.arange(1, n_groups - 1)

    def f_inner(x: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        g = inner[idx]
        s, sp = series(x)
        value, slope = s + k[g], sp
        if extra:
            x_all[g] = x
            tv, ts = ties.at(x_all)
            value, slope = value + tv[g], slope + ts[g]
        return value, slope

    roots[inner] = solve_bracketed(
        f_inner, np.full(inner.shape[0], x_lo), np.full(inner.shape[0], x_hi), guess[inner],
        increasing=False,
    )
    return roots


@dataclass(frozen=True, slots=True)
class Outside:
    """The players outside a range of groups, as distinct (mu, delta) terms with multiplicities:
    ``better`` (they contribute losses) and ``worse`` (wins), each (mu, delta, count/delta)."""

    better: tuple[np.ndarray, np.ndarray, np.ndarray]
    worse: tuple[np.ndarray, np.ndarray, np.ndarray]


class GaussianGroups:
    """Q_g(x) of a contiguous range of groups [g_a, g_b] (Elo-MMchi).

    The players outside the range enter as two weighted sums over their distinct (mu, delta)
    terms (losses of the players better than g_a, wins of those worse than g_b: one erfcx per
    distinct term); the players inside by prefix sums of losses and suffix sums of wins over the
    rank order plus tie group sums.
    """

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
        self.parallel = self.n_terms >= PARALLEL_MIN_TERMS
        self.scale = eq.mu.shape[0] / float(eq.delta.min())  # ~ sum of |terms|, for rounding

    def _distinct(self, players: slice) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        count = np.bincount(self.inverse[players], minlength=self.n_terms)
        used = np.flatnonzero(count)
        delta = self.term_delta[used]
        return self.term_mu[used], delta, count[used] / delta

    def outside(self, g_a: int, g_b: int) -> Outside:
        return Outside(
            better=self._distinct(slice(0, self.start[g_a])), worse=self._distinct(slice(self.end[g_b], None))
        )

    def values(self, x: float, g_a: int, g_b: int, out: Outside) -> np.ndarray:
        """Q_g(x) for g = g_a..g_b."""
        mu, delta, weight = out.better
        far = -float((gaussian_win_ratio((mu - x) / delta) * weight).sum())
        mu, delta, weight = out.worse
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
        return inside + far

    def end_value_and_slope(self, x: float, g: int, out: Outside) -> tuple[float, float]:
        """(Q_g, Q_g') of the best (g = 0: wins + own ties) or worst group (losses + own ties);
        ``out`` = ``outside(g, g)``."""
        if g == 0:
            mu, delta, weight = out.worse
            z = (x - mu) / delta
            r = gaussian_win_ratio(z)
        else:
            mu, delta, weight = out.better
            z = (x - mu) / delta
            r = -gaussian_win_ratio(-z)
        value = float((r * weight).sum())
        slope = float(((-z * r - r * r) * (weight / delta)).sum())
        members = slice(self.start[g], self.end[g])
        loss, win, tie, _, _, tie_p = gaussian_terms(x, self.mu[members], self.delta[members], self.split_ties)
        return value + float(tie.sum()), slope + float(np.broadcast_to(tie_p, tie.shape).sum())


GAUSS_PIECE_HALF_WIDTH = 1.25
"""Initial Gaussian pieces, in units of delta_min (measured: 17-33 nodes then reach the
tolerance; per-group series of degree <= 32 keep the Newton stage cheap)."""
GAUSS_NODE_LEVELS = (17, 33)
EDGE_BATCH = 4
"""Initial piece edges evaluated together (each yields one array over all groups)."""
MAX_PIECE_GROUPS = 1 << 16
"""Pieces holding more groups are halved before fitting: bounds the (nodes x groups) tables."""


def _solve_gaussian(eq: GroupEquations, groups: TieGroups) -> np.ndarray:
    n_groups = groups.n_groups
    field = GaussianGroups(eq, groups)
    ends = np.array([n_groups - 1, 0])

    end_outside = [field.outside(int(g), int(g)) for g in ends]

    def f_ends(x: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pairs = map_points(lambda i: field.end_value_and_slope(float(x[i]), int(ends[idx[i]]), end_outside[idx[i]]),
                           range(x.shape[0]), parallel=field.parallel)
        return np.array([v for v, _ in pairs]), np.array([d for _, d in pairs])

    x_lo, x_hi = solve_bracketed(
        f_ends, np.full(2, SOLVER_BOUNDS[0]), np.full(2, SOLVER_BOUNDS[1]),
        np.full(2, 0.5 * sum(SOLVER_BOUNDS)), increasing=False,
    )
    roots = np.empty(n_groups)
    roots[0], roots[-1] = x_hi, x_lo
    if n_groups <= 2:
        return roots
    inner = np.arange(1, n_groups - 1)
    if not x_hi > x_lo:
        roots[inner] = x_lo
        return roots

    # which initial piece holds each root: Q_g is decreasing, so count the edges where Q_g > 0
    half_width = GAUSS_PIECE_HALF_WIDTH * float(eq.delta.min())
    n_pieces = max(1, math.ceil((x_hi - x_lo) / (2.0 * half_width)))
    edges = np.linspace(x_lo, x_hi, n_pieces + 1)
    piece = np.zeros(inner.shape[0], dtype=np.int64)
    everyone = field.outside(1, n_groups - 2)
    interior = edges[1:-1].tolist()
    for batch in range(0, len(interior), EDGE_BATCH):  # a few (groups,) arrays alive at a time
        for q in map_points(lambda e: field.values(e, 1, n_groups - 2, everyone),
                            interior[batch : batch + EDGE_BATCH], parallel=field.parallel):
            piece += q > 0
    floor = NOISE_ULPS * np.finfo(float).eps * field.scale
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
            todo.extend(t for t in ((a, mid, members[~right]), (mid, b, members[right])) if t[2].shape[0])

        def tolerance(xs: np.ndarray, values: np.ndarray) -> np.ndarray:
            return np.maximum(ROOT_TOL * _secant_slope(xs, values), floor)

        if members.shape[0] > MAX_PIECE_GROUPS and b - a > min_width:
            split()  # bounds the (nodes x groups) tables' memory
            continue
        coef, values, ok = fit_adaptive(evaluate, a, b, tolerance, GAUSS_NODE_LEVELS)
        if not ok and b - a > min_width:
            split()
            continue
        roots[members] = _solve_on_series(coef, values, a, b)
    return roots


def _solve_on_series(coef: np.ndarray, values: np.ndarray, a: float, b: float) -> np.ndarray:
    """Root of each column's (decreasing) Chebyshev series on [a, b], given its ``values`` at the
    Lobatto points (descending x): bracketed by the nodes
    where its tabulated values change sign, started at the secant point, polished by Newton."""
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


def solve_groups_chebyshev(eq: GroupEquations, groups: TieGroups) -> np.ndarray:
    """Every tie group's root (best group first), exact to interpolation accuracy."""
    if eq.terms is logistic_terms:
        return _solve_logistic(eq, groups)
    return _solve_gaussian(eq, groups)
