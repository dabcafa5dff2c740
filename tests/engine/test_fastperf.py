"""The fast exact phase one (Chebyshev fits, modules ``fastperf_*``) agrees with the direct O(N^2)
evaluation; its building blocks (Gaussian ratios, prefix sums, bracketed Newton, threads) are
exact where they claim to be; the subsampled -fast path gives the same floats on any thread count."""

import math
import os
import signal

import numpy as np
import pytest
from scipy.special import log_ndtr

from stream.engine import fastperf_gaussian, fastperf_logistic, numerical, phase_one, preset, subsample
from stream.engine.numerical import prefix_sums, solve_bracketed
from stream.engine.equations import GroupEquations, solve_groups_direct
from stream.engine.performance import opponent_deltas
from stream.engine.ranking import TieGroups
from stream.engine.terms import gaussian_ratios, gaussian_win_ratio

AGREEMENT = 1e-9  # rating points: fast vs direct
CHILD_DEADLINE_S = 60


def _round(rng, n, n_ranks, newcomer_share, p):
    """mu/delta/ranks of a round; newcomers share one (mu, delta), so their terms merge."""
    new = rng.random(n) < newcomer_share
    mu = np.where(new, 1500.0, rng.normal(1500, 400, n))
    sigma = np.where(new, 350.0, rng.uniform(60, 350, n))
    days = np.where(new, 0.0, rng.uniform(0, 30, n))
    _, delta = opponent_deltas(sigma, days, p.with_(drift_per_day=2.0), 1.3)
    ranks = rng.integers(1, n_ranks + 1, n)
    return mu, delta, ranks


def _direct_and_fast(mu, delta, ranks, p):
    groups = TieGroups.from_ranks(ranks)
    eq = GroupEquations(mu, delta, groups, p)
    return solve_groups_direct(eq, np.arange(groups.n_groups)), (fastperf_logistic.solve_logistic if p.variant == "logistic" else fastperf_gaussian.solve_gaussian)(eq, groups)


@pytest.mark.parametrize("name", ["mmr", "mmx"])
@pytest.mark.parametrize("split_ties", [False, True])
@pytest.mark.parametrize("seed,newcomer_share", [(0, 0.0), (1, 0.5)])
def test_chebyshev_matches_direct(name, split_ties, seed, newcomer_share):
    rng = np.random.default_rng(seed)
    p = preset(name).with_(split_ties=split_ties)
    mu, delta, ranks = _round(rng, 700, 400, newcomer_share, p)  # many ties
    direct, fast = _direct_and_fast(mu, delta, ranks, p)
    np.testing.assert_allclose(fast, direct, rtol=0, atol=AGREEMENT)
    assert np.all(np.diff(fast) <= 0)  # better group, higher performance (Theorem 5.2)


@pytest.mark.parametrize("name", ["mmr", "mmx"])
def test_piece_splitting_matches_direct(name, monkeypatch):
    """Fits that do not converge and crowded pieces are halved; the roots stay exact."""
    monkeypatch.setattr(fastperf_logistic, "NODE_LEVELS", (17,))
    monkeypatch.setattr(fastperf_logistic, "PIECE_HALF_WIDTH", 40.0)
    monkeypatch.setattr(fastperf_gaussian, "NODE_LEVELS", (17,))
    monkeypatch.setattr(fastperf_gaussian, "PIECE_HALF_WIDTH", 20.0)
    monkeypatch.setattr(fastperf_gaussian, "MAX_PIECE_GROUPS", 40)
    rng = np.random.default_rng(7)
    p = preset(name)
    mu, delta, ranks = _round(rng, 600, 600, 0.3, p)
    direct, fast = _direct_and_fast(mu, delta, ranks, p)
    np.testing.assert_allclose(fast, direct, rtol=0, atol=AGREEMENT)


@pytest.mark.parametrize("name", ["mmr", "mmx"])
@pytest.mark.parametrize("n_groups", [2, 3])
def test_few_groups_in_a_large_round(name, n_groups):
    rng = np.random.default_rng(3)
    p = preset(name)
    mu, delta, _ = _round(rng, 400, 1, 0.5, p)
    ranks = rng.integers(1, n_groups + 1, 400)
    direct, fast = _direct_and_fast(mu, delta, ranks, p)
    assert fast.shape == (n_groups,)
    np.testing.assert_allclose(fast, direct, rtol=0, atol=AGREEMENT)


def test_large_round_uses_fast_path_and_ties_share_performance():
    p = preset("mmr")
    rng = np.random.default_rng(5)
    n = 21_000
    mu = rng.normal(1500, 300, n)
    ranks = np.argsort(np.argsort(-mu)) // 3 + 1  # groups of three tied players
    perf = phase_one(mu, np.full(n, 120.0), np.zeros(n), ranks, p)
    order = np.argsort(ranks, kind="stable")
    by_rank = perf[order]
    assert np.all(np.diff(by_rank) <= 0)
    assert np.all(by_rank[0::3] == by_rank[1::3]) and np.all(by_rank[1::3] == by_rank[2::3])


@pytest.mark.parametrize("name", ["mmr", "mmx", "mmr-fast", "mmx-fast"])
def test_same_floats_with_and_without_threads(name, monkeypatch):
    """The pipeline and replay must obtain the same floats: threads never change a result."""
    rng = np.random.default_rng(11)
    n = 5_000
    new = rng.random(n) < 0.5
    mu = np.where(new, 1500.0, rng.normal(1500, 350, n))
    sigma = np.where(new, 350.0, rng.uniform(80, 200, n))
    ranks = np.argsort(np.argsort(-(mu + rng.normal(0, 200, n)))) + 1
    ranks[::10] = ranks[::10] // 2 * 2 + 1
    args = (mu, sigma, np.zeros(n), ranks, preset(name))
    monkeypatch.setattr(numerical, "PARALLEL_MIN_ELEMENTS", 0)
    monkeypatch.setattr(subsample, "CHUNK_ELEMENTS", 1 << 15)  # several -fast chunks
    threaded = phase_one(*args)
    monkeypatch.setattr(numerical, "_pool", lambda: None)
    alone = phase_one(*args)
    assert np.array_equal(threaded, alone)
    assert np.all(np.isfinite(alone))


def test_gaussian_ratios_match_the_log_cdf_form():
    z = np.concatenate((np.linspace(-38.0, 38.0, 20_001), [0.0, -0.0]))
    r_win, r_loss = gaussian_ratios(z)
    log_pdf = -0.5 * z * z - 0.5 * math.log(2 * math.pi)
    np.testing.assert_allclose(r_win, np.exp(log_pdf - log_ndtr(z)), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(r_loss, -np.exp(log_pdf - log_ndtr(-z)), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(gaussian_win_ratio(z), r_win, rtol=1e-13, atol=1e-300)
    far_r_win, far_r_loss = gaussian_ratios(np.array([-1e3, 1e3]))  # no overflow to nan
    assert far_r_win[1] == 0.0 and far_r_loss[0] == 0.0
    np.testing.assert_allclose([far_r_win[0], -far_r_loss[1]], [1e3, 1e3], rtol=1e-5)


@pytest.mark.parametrize("n", [0, 1, 2, 17, 10_007])
def test_prefix_sums(n):
    values = np.random.default_rng(n).normal(0, 1, n)
    out = prefix_sums(values)
    assert out.shape == (n + 1,) and out[0] == 0.0
    exact = np.array([math.fsum(values[:k]) for k in range(0, n + 1, max(1, n // 50))])
    np.testing.assert_allclose(out[:: max(1, n // 50)], exact, rtol=0, atol=1e-12)


def test_solve_bracketed_stops_at_float_resolution_and_bisects_flat_tails():
    root = 1453.5776686833904
    lines = lambda x, idx: ((root - x) * 0.36, np.full_like(x, -0.36))  # noqa: E731
    start = np.array([root + 1e-13])
    x = solve_bracketed(lines, np.array([-6000.0]), np.array([9000.0]), start, increasing=False)
    assert abs(x[0] - root) < 1e-12
    # derivative underflows to 0 far out (tanh): bisection, not a stall
    flat = lambda x, idx: (-np.tanh(x - 3.0), -np.cosh(np.minimum(np.abs(x - 3.0), 700.0)) ** -2.0)  # noqa: E731
    x = solve_bracketed(flat, np.array([-6000.0, -6000.0]), np.array([9000.0, 9000.0]),
                        np.array([8000.0, -5000.0]), increasing=False)
    np.testing.assert_allclose(x, 3.0, atol=1e-12)


def test_thread_pool_works_in_a_forked_child():
    """A worker process forked after the pool started gets its own pool (no deadlock)."""
    assert numerical.map_points(float, [1, 2]) == [1.0, 2.0]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: report the result through the pipe, never run pytest's teardown
        signal.alarm(CHILD_DEADLINE_S)  # a deadlock kills the child instead of hanging the test
        try:
            os.write(write, repr(numerical.map_points(lambda v: v * 3.0, [1.0, 2.0])).encode())
        finally:
            os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    assert status == 0
    assert os.read(read, 100) == b"[3.0, 6.0]"
