"""The compiled loops (stream/engine/kernels.py) against the numpy path they replace."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.engine import kernels, preset
from stream.engine.numerical import solve_bracketed
from stream.engine.params import SOLVER_BOUNDS
from stream.engine.subsample import bucket, subsampled_performance, window_bounds
from stream.engine.terms import logistic_terms

SETTINGS = settings(max_examples=60, deadline=None)
ROOT_TOL = 1e-9


def subsampled_numpy(mu: np.ndarray, delta: np.ndarray, ranks: np.ndarray, size: int, width: float,
                     split_ties: bool) -> tuple[np.ndarray, np.ndarray]:
    """The -fast logistic phase one written out plainly: merged (mu bucket, delta bucket) terms,
    each player's window, loss/tie/win counts by comparing every member's rank, and the dense
    equations solved by the numpy Newton.  Also returns whether each player's own term is in his
    window (otherwise a player who beats his whole window has an equation that only tends to
    zero: its "root" is wherever the tail rounds to 0, and no two solvers agree on it)."""
    bm, bd = bucket(mu, width), bucket(delta, width)
    pairs = sorted(set(zip(bm.tolist(), bd.tolist())))
    term_of = np.array([pairs.index(p) for p in zip(bm.tolist(), bd.tolist())])
    n_terms = len(pairs)
    term_mu = np.array([mu[term_of == t].mean() for t in range(n_terms)])
    term_delta = np.array([delta[term_of == t].mean() for t in range(n_terms)])
    beg, end = window_bounds(np.array([p[0] for p in pairs]), bm, size)
    n = mu.shape[0]
    counts = np.zeros((3, n, n_terms))  # loss, tie, win of each player against each term
    for i in range(n):
        for j in range(n):
            if beg[i] <= term_of[j] < end[i]:
                kind = 0 if ranks[j] < ranks[i] else (1 if ranks[j] == ranks[i] else 2)
                counts[kind, i, term_of[j]] += 1

    def f(x: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        loss, win, tie, loss_p, win_p, tie_p = logistic_terms(x[:, None], term_mu, term_delta, split_ties)
        c = counts[:, idx]
        return ((c[0] * loss + c[1] * tie + c[2] * win).sum(axis=1),
                (c[0] * loss_p + c[1] * tie_p + c[2] * win_p).sum(axis=1))

    roots = solve_bracketed(f, np.full(n, SOLVER_BOUNDS[0]), np.full(n, SOLVER_BOUNDS[1]), mu.copy(),
                            increasing=False)
    return roots, (beg <= term_of) & (term_of < end)


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(2, 120), st.sampled_from([3, 8, 20, 100]),
       st.sampled_from([2.0, 25.0]), st.booleans(), st.floats(0.0, 1.0))
def test_subsampled_kernel_equals_the_numpy_path(seed, n, size, width, split_ties, shared):
    """Windows, merged terms, ties and newcomers (shared mu and sigma) as the plain computation."""
    rng = np.random.default_rng(seed)
    newcomer = rng.random(n) < shared
    mu = np.where(newcomer, 1500.0, rng.normal(1500, 300, n))
    delta = np.where(newcomer, 400.0, rng.uniform(90, 380, n))
    ranks = rng.integers(0, max(2, n // int(rng.integers(1, 4))), n)
    params = preset("mmr-fast").with_(subsample_size=size, subsample_bucket=width, split_ties=split_ties)
    ours = subsampled_performance(mu, delta, ranks, params)
    plain, proper = subsampled_numpy(mu, delta, ranks, size, width, split_ties)
    assert proper.sum() >= min(n, size // 2)
    np.testing.assert_allclose(ours[proper], plain[proper], rtol=0, atol=ROOT_TOL)


@settings(max_examples=200, deadline=None)
@given(st.floats(-1e4, 1e4))
def test_fast_tanh_is_tanh_to_the_last_bits(z):
    assert abs(kernels.fast_tanh(z) - math.tanh(z)) <= 4e-16


def test_exp_nonpositive_is_exp_to_a_few_ulp():
    y = np.concatenate((-np.geomspace(1e-12, 40, 200_001), [0.0, -0.0, -40.0, -41.0, -700.0]))
    ours = np.array([kernels.exp_nonpositive(v) for v in y[::97]] + [kernels.exp_nonpositive(v) for v in y[-5:]])
    want = np.exp(np.maximum(np.concatenate((y[::97], y[-5:])), kernels.EXP_FLOOR))
    assert np.all(np.abs(ours - want) <= 4 * np.spacing(want))


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(1, 40))
def test_tanh_sum_equals_numpy(seed, m):
    rng = np.random.default_rng(seed)
    x = float(rng.normal(1500, 400))
    centre, scale, weight = rng.normal(1500, 400, m), rng.uniform(1e-3, 0.03, m), rng.normal(0, 5, m)
    th = np.tanh((x - centre) * scale)
    value, slope, curve = kernels.tanh_sum(x, centre, scale, weight, m)
    scale_of = np.abs(weight).sum() + 1e-300
    assert abs(value - (weight * th).sum()) <= 1e-14 * scale_of
    assert abs(slope - (weight * scale * (1 - th**2)).sum()) <= 1e-14 * scale_of * scale.max()
    assert abs(curve - (-2 * weight * scale**2 * th * (1 - th**2)).sum()) <= 1e-14 * scale_of * scale.max() ** 2
