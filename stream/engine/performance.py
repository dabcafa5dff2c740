"""Phase one: every participant's performance p_i, the zero of Q_i (Section 3.1, Algorithm 3).

Q_i(x) sums LOSS terms over strictly better players, WIN terms over strictly worse ones and TIE
terms over its own tie group (``terms``); one root per tie group, on the reference's bracket
(-6000, 9000). Exact solvers: :func:`solve_segments` (small rounds, one or a wave at once),
``equations`` (direct O(N) per evaluation: large draws, extreme groups, test oracle) and the
Chebyshev fits of ``fastperf_logistic`` / ``fastperf_gaussian`` (large rounds, O(N x nodes),
roots within ~1e-11, ``chebyshev.ROOT_TOL``). The ``-fast`` presets subsample (``subsample``).
"""

from __future__ import annotations

import math

import numpy as np

from .diffusion import drifted_sigma, gammas
from .equations import GroupEquations, solve_groups_direct
from .fastperf_gaussian import solve_gaussian
from .fastperf_logistic import solve_logistic
from .kernels import segment_roots
from .numerical import solve_bracketed
from .params import SOLVER_BOUNDS, Params, performance_noise
from .ranking import TieGroups
from .subsample import subsampled_performance
from .terms import terms_for

DIRECT_MAX_PLAYERS = 256
"""Rounds up to this size are solved by the direct O(N * groups) method."""


def opponent_deltas(
    sigma: np.ndarray, days: np.ndarray, params: Params, weight: float | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(sigma', delta) = (sqrt(sigma^2 + gamma^2), sqrt(sigma'^2 + beta^2)) (Algorithm 1)."""
    sig_drifted = drifted_sigma(np.asarray(sigma, dtype=float), gammas(params, weight, days))
    return sig_drifted, np.hypot(sig_drifted, performance_noise(params, weight))


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
    """Performances of all participants from their stored posteriors (the drift is applied here);
    ``OutcomeFree`` for fewer than 2 players or a draw unless ``params.draws_rate``; logistic
    results clipped to ``perf_ceiling`` (Gaussian not, as in the reference)."""
    mu = np.asarray(mu, dtype=float)
    groups = TieGroups.from_ranks(ranks, draws=params.draws_rate)
    _, delta = opponent_deltas(sigma, elapsed_days, params, weight)
    if params.subsample_size is not None:
        perf = subsampled_performance(mu, delta, np.asarray(ranks), params)
    elif mu.shape[0] <= DIRECT_MAX_PLAYERS:
        perf = solve_segments(mu, delta, np.asarray(ranks), np.array([0, mu.shape[0]]), params)
    elif groups.n_groups == 1:  # a large draw: one equation, solved directly (O(N) per evaluation)
        perf = np.repeat(solve_groups_direct(GroupEquations(mu, delta, groups, params), np.zeros(1, np.int64)),
                         mu.shape[0])
    else:
        solve = solve_logistic if params.variant == "logistic" else solve_gaussian
        perf = solve(GroupEquations(mu, delta, groups, params), groups)[groups.group_of]
    if params.variant == "logistic":
        perf = np.minimum(perf, perf_ceiling)
    return perf


def solve_segments(
    mu: np.ndarray, delta: np.ndarray, ranks: np.ndarray, bounds: np.ndarray, params: Params
) -> np.ndarray:
    """Exact performances (unclipped) of several small rounds at once, round r at positions
    ``bounds[r]:bounds[r + 1]`` (none outcome free): one equation per (round, tie group) over its
    own round, summed left to right, from the group's mean mu, so each round gets the floats it gets
    alone; logistic compiled (``kernels.segment_roots``), Gaussian padded to the largest round."""
    n = mu.shape[0]
    n_rounds = bounds.shape[0] - 1
    sizes = np.diff(bounds)
    seg = np.repeat(np.arange(n_rounds), sizes)
    order = np.lexsort((ranks, seg))
    seg_s, rank_s = seg[order], ranks[order]
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = (seg_s[1:] != seg_s[:-1]) | (rank_s[1:] != rank_s[:-1])
    gid = np.cumsum(new_group) - 1
    eq_seg = seg_s[new_group]
    sizes_g = np.diff(np.append(np.flatnonzero(new_group), n))
    guess = np.bincount(gid, weights=mu[order]) / sizes_g
    perf = np.empty(n)
    if params.variant == "logistic":  # compiled: each equation sums its own round only
        roots = segment_roots(mu[order], delta[order], gid, np.asarray(bounds, dtype=np.int64), eq_seg, guess,
                              1.0 if params.split_ties else 2.0)
        perf[order] = roots[gid]
        return perf
    width = int(sizes.max())
    pos = np.arange(n) - bounds[seg_s]
    mu_m = np.zeros((n_rounds, width))
    delta_m = np.ones((n_rounds, width))
    group_m = np.zeros((n_rounds, width), dtype=np.int64)
    valid = np.zeros((n_rounds, width), dtype=bool)
    mu_m[seg_s, pos], delta_m[seg_s, pos], group_m[seg_s, pos], valid[seg_s, pos] = mu[order], delta[order], gid, True
    # each equation's opponents: -1 ranked better (loss), 0 tied (tie), +1 worse (win), padding 0
    rel = np.sign(group_m[eq_seg] - np.arange(gid[-1] + 1)[:, None])
    use = valid[eq_seg]
    opp_mu, opp_delta = mu_m[eq_seg], delta_m[eq_seg]
    terms = terms_for(params.variant)

    def f(x: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        loss, win, tie, loss_p, win_p, tie_p = terms(x[:, None], opp_mu[idx], opp_delta[idx], params.split_ties)
        r, u = rel[idx], use[idx]
        value = _row_sums(np.where(r < 0, loss, np.where(r > 0, win, tie)) * u)
        deriv = _row_sums(np.where(r < 0, loss_p, np.where(r > 0, win_p, tie_p)) * u)
        return value, deriv

    k = guess.shape[0]
    roots = solve_bracketed(f, np.full(k, SOLVER_BOUNDS[0]), np.full(k, SOLVER_BOUNDS[1]), guess, increasing=False)
    perf[order] = roots[gid]
    return perf


def _row_sums(terms: np.ndarray) -> np.ndarray:
    """Each row's sum left to right (``np.cumsum``'s last column): padding zeros change nothing,
    whereas ``.sum(axis=1)``'s pairwise order depends on the row's length."""
    return np.cumsum(terms, axis=1)[:, -1]


def performance_of(
    mu: np.ndarray,
    sigma: np.ndarray,
    elapsed_days: np.ndarray,
    ranks: np.ndarray,
    i: int,
    params: Params,
    *,
    weight: float = 1.0,
    perf_ceiling: float = math.inf,
) -> float:
    """Participant ``i``'s performance alone, as :func:`phase_one` gives it (to ~1e-11: its group's
    equation solved directly), for what-if searches over one player's rank."""
    if params.subsample_size is not None:
        return float(phase_one(mu, sigma, elapsed_days, ranks, params, weight=weight, perf_ceiling=perf_ceiling)[i])
    mu = np.asarray(mu, dtype=float)
    groups = TieGroups.from_ranks(ranks, draws=params.draws_rate)
    _, delta = opponent_deltas(sigma, elapsed_days, params, weight)
    root = float(solve_groups_direct(GroupEquations(mu, delta, groups, params), groups.group_of[[i]])[0])
    return min(root, perf_ceiling) if params.variant == "logistic" else root
