"""The O(N * nodes) Chebyshev phase one agrees with the direct O(N^2) evaluation."""

import numpy as np
import pytest

from stream.engine import phase_one, preset
from stream.engine.fastperf import solve_groups_chebyshev
from stream.engine.performance import GroupEquations, opponent_deltas, solve_groups_direct
from stream.engine.ranking import TieGroups


@pytest.mark.parametrize("name", ["mmr", "mmx"])
@pytest.mark.parametrize("split_ties", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_chebyshev_matches_direct(name, split_ties, seed):
    rng = np.random.default_rng(seed)
    p = preset(name).with_(split_ties=split_ties)
    n = 700
    mu = np.where(rng.random(n) < 0.3, 1500.0, rng.normal(1500, 400, n))
    sigma = rng.uniform(60, 350, n)
    ranks = rng.integers(1, 400, n)  # many ties
    _, delta = opponent_deltas(sigma, rng.uniform(0, 30, n), p.with_(drift_per_day=2.0), 1.3)
    groups = TieGroups.from_ranks(ranks)
    eq = GroupEquations(mu, delta, groups, p)
    direct = solve_groups_direct(eq, np.arange(groups.n_groups))
    fast = solve_groups_chebyshev(eq, groups)
    np.testing.assert_allclose(fast, direct, rtol=0, atol=1e-9)
    assert np.all(np.diff(fast) <= 0)  # better group, higher performance (Theorem 5.2)


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
