"""Phase one: every participant's performance p_i, the zero of Q_i (Section 3.1, Algorithm 3).

Q_i(x) = sum over strictly better players of LOSS terms + strictly worse players of WIN terms +
its own tie group (itself included) of TIE terms (see ``terms``).  Every member of a tie group
has the same equation, so one root is solved per group.  Roots are solved on the reference's
bracket (-6000, 9000) with its safeguarded Newton.

Two exact solvers:
* ``direct``: evaluates Q_g by summing over all N players (O(N) per evaluation, chunked);
  used for small rounds, for the two extreme groups, and as the test oracle;
* ``chebyshev`` (module ``fastperf``): Chebyshev fits of the group equations, O(N x nodes) with
  ~100-600 N-sized passes, for large rounds (exact to ~1e-11 rating points).
The ``-fast`` presets instead use the authors' opponent subsampling (module ``subsample``).
"""

from __future__ import annotations

import math

import numpy as np

from .diffusion import drifted_sigma, gammas
from .numerical import Equations, solve_bracketed, solve_newton
from .params import SOLVER_BOUNDS, Params
from .ranking import TieGroups
from .terms import terms_for

CHUNK_ELEMENTS = 1 << 21
"""Max elements of one (equations x players) block in the direct solver (~16 MB of floats)."""
DIRECT_MAX_PLAYERS = 256
"""Rounds up to this size are solved by the direct O(N * groups) method."""


def opponent_deltas(
    sigma: np.ndarray, days: np.ndarray, params: Params, weight: float
) -> tuple[np.ndarray, np.ndarray]:
    """(sigma', delta): the drifted uncertainty sqrt(sigma^2 + gamma^2) and the opponent-term
    width delta = sqrt(sigma'^2 + beta^2) (Algorithm 1)."""
    sig_drifted = drifted_sigma(np.asarray(sigma, dtype=float), gammas(params, weight, days))
    return sig_drifted, np.hypot(sig_drifted, params.beta(weight))


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
    """Roots of Q_g for the given groups on the reference bracket."""
    k = groups_to_solve.shape[0]
    return solve_newton(
        lambda x, idx: eq(x, groups_to_solve[idx]),
        np.full(k, SOLVER_BOUNDS[0]),
        np.full(k, SOLVER_BOUNDS[1]),
        increasing=False,
    )


def phase_one(
    mu: np.ndarray,
    sigma: np.ndarray,
    elapsed_days: np.ndarray,
    ranks: np.ndarray,
    params: Params,
    *,
    weight: float = 1.0,
    perf_ceiling: float = math.inf,
) -> np.ndarray:
    """Performances of all participants, aligned with the inputs.

    ``mu``/``sigma`` are the stored posteriors before this round's drift; the drift is applied
    here.  Raises ``OutcomeFree`` for fewer than 2 players or an all-tied round.  The logistic
    result is clipped to ``perf_ceiling`` (the Gaussian one is not, as in the reference).
    """
    mu = np.asarray(mu, dtype=float)
    groups = TieGroups.from_ranks(ranks)
    _, delta = opponent_deltas(sigma, elapsed_days, params, weight)
    if params.subsample_size is not None:
        from .subsample import subsampled_performance

        perf = subsampled_performance(mu, delta, np.asarray(ranks), params)
    else:
        group_perf = solve_all_groups(mu, delta, groups, params)
        perf = group_perf[groups.group_of]
    if params.variant == "logistic":
        perf = np.minimum(perf, perf_ceiling)
    return perf


def solve_all_groups(mu: np.ndarray, delta: np.ndarray, groups: TieGroups, params: Params) -> np.ndarray:
    """One exact root per tie group (best group first)."""
    eq = GroupEquations(mu, delta, groups, params)
    if mu.shape[0] <= DIRECT_MAX_PLAYERS:
        return solve_groups_direct(eq, np.arange(groups.n_groups))
    from .fastperf import solve_groups_chebyshev  # imports this module: deferred

    return solve_groups_chebyshev(eq, groups)


def solve_extreme_groups(f_ends: Equations, n_groups: int) -> tuple[np.ndarray, bool]:
    """Roots of the worst and the best group (``f_ends`` evaluates those two equations).

    Every other group's root lies between them (Theorem 5.2), so they bracket the fast solvers'
    work.  Returns the array of all roots with both ends filled, and whether the inner roots still
    need solving: not when there are none, nor when the range is empty (they all equal its end).
    """
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
