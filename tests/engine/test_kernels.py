"""The compiled loops (stream/engine/kernels.py) against the numpy path they replace."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.engine import Params, PlayerBatch, kernels, phase_two, preset, rate_round
from stream.engine.diffusion import diffuse, elapsed_days, gammas
from stream.engine.numerical import solve_bracketed
from stream.engine.params import SOLVER_BOUNDS
from stream.engine.subsample import bucket, subsampled_performance, window_bounds
from stream.engine.terms import logistic_terms
from stream.engine.update import update_beliefs
from tests.engine.oracles import fold_oldest
from tests.engine.test_rounds import random_prior

SETTINGS = settings(max_examples=60, deadline=None)
ROOT_TOL = 1e-9
DAY = 86_400.0


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


def numpy_phase_two(batch: PlayerBatch, performance: np.ndarray, params: Params, weights: np.ndarray,
                    times: np.ndarray) -> PlayerBatch:
    """Phase two by the numpy functions: diffuse, then update_beliefs (fold, append, robust average)."""
    days = elapsed_days(batch.last_time, times)
    gamma = np.array([gammas(params, w, d) for w, d in zip(weights, days)]).reshape(-1)
    beta = np.array([params.beta(w) for w in weights])
    after = update_beliefs(fold_oldest(diffuse(batch, gamma, params), params.history_limit), performance, beta, params)
    after.rounds = batch.rounds + 1
    after.last_time = times.copy()
    return after


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(1, 25), st.sampled_from([None, 1, 2, 5]),
       st.sampled_from([1.0, 0.04, 0.5]), st.integers(0, 8))
def test_phase_two_kernel_equals_the_numpy_functions(seed, n, limit, rho, rounds_before):
    """The compiled phase two (diffusion, fold, append, robust average per row) as the numpy path,
    on histories of various lengths (some beyond the bound), weights and elapsed times."""
    rng = np.random.default_rng(seed)
    params = preset("mmr").with_(history_limit=limit, rho=rho, drift_per_day=float(rng.choice([0.0, 30.0])))
    batch = PlayerBatch.new(n, preset("mmr"))  # unbounded while building: histories may exceed the bound
    for t in range(rounds_before):
        who = np.flatnonzero(rng.random(n) < 0.7)
        if who.shape[0] >= 2:
            sub = rate_round(batch.take(who), rng.permutation(who.shape[0]) + 1, preset("mmr"), time=t * DAY).after
            batch.put(who, sub)
    performance = rng.normal(1500, 400, n)
    weights = rng.choice([1.0, 0.5, 1.7], n)
    times = np.full(n, (rounds_before + rng.uniform(0, 30)) * DAY)
    ours = phase_two(batch, performance, params, weight=weights, time=times)
    plain = numpy_phase_two(batch, performance, params, weights, times)
    for field in ("mu", "sigma", "mu0", "w0"):
        np.testing.assert_allclose(getattr(ours, field), getattr(plain, field), rtol=1e-13, atol=ROOT_TOL)
    np.testing.assert_array_equal(ours.n_factors, plain.n_factors)
    np.testing.assert_array_equal(ours.rounds, plain.rounds)
    h = plain.p.shape[1]
    assert ours.p.shape[1] == h
    for field in ("p", "w_arg", "w_out"):
        np.testing.assert_allclose(getattr(ours, field), getattr(plain, field), rtol=1e-13, atol=0)


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(1, 30), st.sampled_from([1.0, 0.04, 5.0]))
def test_diffusion_gives_a_row_the_same_floats_in_any_batch(seed, n, rho):
    """``diffuse`` (a season's soft reset) of a row alone, beside others or padded wider: the
    same floats (stream waves, phase two's batches and the backfill's rounds hold a row at
    different widths)."""
    rng = np.random.default_rng(seed)
    batch = random_prior(n, rng, 35)
    params = preset("mmr").with_(rho=rho)
    gamma = rng.uniform(1.0, 150.0, n)
    whole = diffuse(batch, gamma, params)
    h = whole.p.shape[1]
    for width in (h + 1, 8, 16, 40):
        wide = diffuse(batch.copy(width=width), gamma, params)
        for field in ("mu0", "w0", "sigma"):
            np.testing.assert_array_equal(getattr(wide, field), getattr(whole, field))
        np.testing.assert_array_equal(wide.w_out[:, :h], whole.w_out)
    for i in range(n):
        alone = diffuse(batch.take(np.array([i])), gamma[[i]], params)
        assert (alone.mu0[0], alone.w0[0]) == (whole.mu0[i], whole.w0[i])
