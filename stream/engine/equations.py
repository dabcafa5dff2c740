"""The tie groups' equations Q_g of one round evaluated directly (Section 3.1, Algorithm 3): every
player's LOSS, WIN or TIE term (``terms``), O(N) per evaluation, chunked; for large draws, the extreme
groups of large rounds (Theorem 5.2) and the fast solvers' test oracle.
"""

from __future__ import annotations

import numpy as np

from .numerical import Equations, solve_bracketed
from .params import SOLVER_BOUNDS, Params
from .ranking import TieGroups
from .terms import terms_for

CHUNK_ELEMENTS = 1 << 21
"""Max elements of one (equations x players) block in the direct solver (~16 MB of floats)."""


class GroupEquations:
    """Q_g for the tie groups of a round, evaluated directly against the sorted players."""

    def __init__(self, mu: np.ndarray, delta: np.ndarray, groups: TieGroups, params: Params):
        self.mu = mu[groups.order]
        self.delta = delta[groups.order]
        self.group_sorted = groups.group_of[groups.order]
        self.terms = terms_for(params.variant)
        self.split_ties = params.split_ties

    def __call__(self, x: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(Q_g(x), Q_g'(x)) for equations g at points x."""
        n = self.mu.shape[0]
        value = np.empty(x.shape[0])
        deriv = np.empty(x.shape[0])
        step = max(1, CHUNK_ELEMENTS // n)
        for a in range(0, x.shape[0], step):
            xs, gs = x[a : a + step, None], g[a : a + step, None]
            loss, win, tie, loss_p, win_p, tie_p = self.terms(xs, self.mu, self.delta, self.split_ties)
            better = self.group_sorted < gs
            worse = self.group_sorted > gs
            value[a : a + step] = np.where(better, loss, np.where(worse, win, tie)).sum(axis=1)
            deriv[a : a + step] = np.where(better, loss_p, np.where(worse, win_p, tie_p)).sum(axis=1)
        return value, deriv


def solve_groups_direct(eq: GroupEquations, groups_to_solve: np.ndarray) -> np.ndarray:
    """Roots of Q_g for the given groups on the reference bracket, from its midpoint."""
    k = groups_to_solve.shape[0]
    lo, hi = np.full(k, SOLVER_BOUNDS[0]), np.full(k, SOLVER_BOUNDS[1])
    return solve_bracketed(lambda x, idx: eq(x, groups_to_solve[idx]), lo, hi, 0.5 * (lo + hi), increasing=False)


def solve_extreme_groups(f_ends: Equations, n_groups: int) -> tuple[np.ndarray, bool]:
    """Roots of the worst and best groups (bracketing all, Theorem 5.2), and whether inner ones remain."""
    x_lo, x_hi = solve_bracketed(
        f_ends, np.full(2, SOLVER_BOUNDS[0]), np.full(2, SOLVER_BOUNDS[1]),
        np.full(2, 0.5 * sum(SOLVER_BOUNDS)), increasing=False,
    )
    roots = np.empty(n_groups)
    roots[0], roots[-1] = x_hi, x_lo
    if n_groups <= 2:
        return roots, False
    if not x_hi > x_lo:
        roots[1:-1] = x_lo
        return roots, False
    return roots, True
