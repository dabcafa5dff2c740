"""Exact phase one of the logistic model (Elo-MMR) for huge rounds: one shared Chebyshev fit.

Loss/win terms differ from b_j(x) = -c_j tanh((x - mu_j) c_j/2) by -/+ c_j (module ``terms``),
so for tie group g (players sorted by rank)
    Q_g(x) = S(x) + K_g + e sum_{j in g} b_j(x),   S = sum_j b_j,
    K_g = sum_{worse} c_j - sum_{better} c_j,      e = 1 (0 with split ties):
ONE function S for all groups (identical (mu, delta) merged).  The extreme groups are solved
first; all roots lie between theirs (Theorem 5.2), where S is fitted piecewise (analytic for
|Im x| < sqrt(3) delta_min), re-expanded into short degree-11 pieces, and each root found by a
bracketed Newton on S + K_g + its own tie terms (exact) from an inverse-table guess.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .chebyshev import (MIN_PIECE_HALF_WIDTH, clenshaw, derivative_coefficients, fit_adaptive, lobatto,
                        root_tolerance, values_to_coefficients)
from .equations import GroupEquations, solve_extreme_groups
from .numerical import map_points, prefix_sums, solve_bracketed, worth_threads
from .ranking import TieGroups
from .state import TANH_MULTIPLIER

STRIP_HALF_WIDTH = math.sqrt(3.0)
"""The logistic terms are analytic for |Im x| < sqrt(3) delta (poles of tanh), in delta units."""
PIECE_HALF_WIDTH = 6.0
"""Initial fit pieces, in units of delta_min: the Bernstein ellipse of [-6, 6] delta_min through
the strip has rho ~ 1.33, so 129 nodes reach ~1e-16 even in the worst case (fewer usually do)."""
NODE_LEVELS = (17, 33, 65, 129)
"""Nested node counts tried on each piece of S before it is halved."""
SUB_NODES = 12
"""Nodes of the short pieces S is re-expanded into for the Newton stage (degree 11)."""
SUB_RHO = 30.0
"""Their half-width is strip / SUB_RHO: error ~ SUB_RHO^-(SUB_NODES-1) ~ 6e-17 relative."""
EVAL_CHUNK = 1 << 15
"""Points per chunk when the re-expanded S is evaluated at many points."""


class LogisticSum:
    """S(x) = sum_j -c_j tanh((x - mu_j) c_j/2) over all players, identical (mu, delta) merged."""

    def __init__(self, mu: np.ndarray, delta: np.ndarray):
        pairs, counts = np.unique(mu + 1j * delta, return_counts=True)  # sorts by (mu, delta)
        self.mu = np.ascontiguousarray(pairs.real)
        c = TANH_MULTIPLIER / np.ascontiguousarray(pairs.imag)
        self.half_c = 0.5 * c
        self.weight = counts * c
        self.scale = float(self.weight.sum())
        self.parallel = worth_threads(self.mu.shape[0])

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


@dataclass
class PiecewiseSeries:
    """A function as Chebyshev series on consecutive pieces [edges[k], edges[k+1]], plus a table
    of its values at the pieces' nodes (``table_x`` ascending), for inverse interpolation."""

    edges: np.ndarray
    coef: np.ndarray  # (degree + 1, pieces)
    table_x: np.ndarray
    table_value: np.ndarray

    def __post_init__(self) -> None:
        self.mid = 0.5 * (self.edges[1:] + self.edges[:-1])
        self.half = 0.5 * (self.edges[1:] - self.edges[:-1])
        self.dcoef = derivative_coefficients(self.coef) / self.half

    def __call__(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(value, derivative) at x (clamped), in fixed chunks on the thread pool (the same floats)."""
        if x.shape[0] <= EVAL_CHUNK:
            return self._at(x)
        parts = map_points(lambda a: self._at(x[a : a + EVAL_CHUNK]), range(0, x.shape[0], EVAL_CHUNK))
        return np.concatenate([v for v, _ in parts]), np.concatenate([d for _, d in parts])

    def _at(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = np.clip(np.searchsorted(self.edges, x, side="right") - 1, 0, self.mid.shape[0] - 1)
        t = np.clip((x - self.mid[k]) / self.half[k], -1.0, 1.0)
        return clenshaw(self.coef, t, k), clenshaw(self.dcoef, t, k)


Piece = tuple[float, float, np.ndarray]
"""(a, b, Chebyshev coefficients on [a, b])."""


def _fit_pieces(evaluate: Callable[[np.ndarray], np.ndarray], a: float, b: float, half_width: float,
                tolerance: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> list[Piece]:
    """Adaptive piecewise fit of [a, b]: (a_k, b_k, coefficients), pieces halved until within tolerance."""
    n = max(1, math.ceil((b - a) / (2.0 * half_width)))
    edges = np.linspace(a, b, n + 1).tolist()
    todo = list(zip(edges[:-1], edges[1:]))
    done = []
    min_width = 2.0 * MIN_PIECE_HALF_WIDTH * half_width / PIECE_HALF_WIDTH
    while todo:
        lo, hi = todo.pop()
        coef, _, ok = fit_adaptive(evaluate, lo, hi, tolerance, NODE_LEVELS)
        if ok or hi - lo <= min_width:
            done.append((lo, hi, coef))
        else:
            m = 0.5 * (lo + hi)
            todo += [(lo, m), (m, hi)]
    return sorted(done, key=lambda piece: piece[0])


def _reexpand(pieces: list[Piece], sub_half: float) -> PiecewiseSeries:
    """The fitted pieces re-expanded into short degree-(SUB_NODES - 1) pieces (exact to rounding)."""
    edges, coefs, table_x, table_value = [], [], [], []
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
        table_x.append(x[::-1].T.ravel())  # ascending: pieces ascend, nodes descend
        table_value.append(values[::-1].T.ravel())
    edges.append(np.array([pieces[-1][1]]))
    return PiecewiseSeries(
        np.concatenate(edges), np.concatenate(coefs, axis=1), np.concatenate(table_x),
        np.concatenate(table_value),
    )


def solve_logistic(eq: GroupEquations, groups: TieGroups) -> np.ndarray:
    """Every tie group's root (best group first)."""
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

    roots, inner_left = solve_extreme_groups(f_ends, n_groups)
    if not inner_left:
        return roots
    x_hi, x_lo = float(roots[0]), float(roots[-1])

    delta_min = float(eq.delta.min())
    pieces = _fit_pieces(
        lambda xs: total.values(xs)[:, None], x_lo, x_hi, PIECE_HALF_WIDTH * delta_min,
        root_tolerance(total.scale),
    )
    series = _reexpand(pieces, STRIP_HALF_WIDTH * delta_min / SUB_RHO)

    # initial guesses: solve S(x) = -K_g on the table of S (decreasing) at the short pieces' nodes
    guess = np.interp(k, -series.table_value, series.table_x)
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
