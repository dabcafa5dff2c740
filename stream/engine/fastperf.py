"""Exact phase one for huge rounds in O(N x nodes): Chebyshev interpolation of the group
equations instead of O(N) work per equation evaluation (``equations.solve_groups_direct``).

* logistic (Elo-MMR): ``fastperf_logistic``: one function S(x) shared by every group's equation
  is fitted once; the roots come from a Newton on S + per-group constants and own tie terms;
* Gaussian (Elo-MMchi): ``fastperf_gaussian``: the groups' equations are fitted piece by piece.

Both merge players with identical (mu, delta) into one term, evaluate independent points on a
small thread pool (each point wholly on one thread: the floats do not depend on the thread
count), and refine their fits until the interpolation error moves no root by more than ~1e-11
(``chebyshev.ROOT_TOL``); tests check agreement with the direct evaluation to 1e-9.
"""

from __future__ import annotations

import numpy as np

from .fastperf_gaussian import solve_gaussian
from .fastperf_logistic import solve_logistic
from .equations import GroupEquations
from .ranking import TieGroups
from .terms import logistic_terms


def solve_groups_chebyshev(eq: GroupEquations, groups: TieGroups) -> np.ndarray:
    """Every tie group's root (best group first), exact to interpolation accuracy."""
    if eq.terms is logistic_terms:
        return solve_logistic(eq, groups)
    return solve_gaussian(eq, groups)
