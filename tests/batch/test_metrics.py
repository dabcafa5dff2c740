"""Metrics: hand-computed small cases (with ties), the vectorised inversion count against brute
force, and the scoring rules (first 10 % skipped, first-timers and inexperienced excluded)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from stream.batch.metrics import Metrics, count_inversions, pair_metric, rank_deviation
from stream.engine.ratings import tie_spans


def brute_inversions(values: list[float]) -> int:
    return sum(1 for i, j in itertools.combinations(range(len(values)), 2) if values[i] > values[j])


@pytest.mark.parametrize("seed", range(6))
def test_count_inversions_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 7, size=int(rng.integers(0, 60))).astype(float)
    assert count_inversions(values) == brute_inversions(values.tolist())


def test_count_inversions_extremes() -> None:
    assert count_inversions(np.arange(10.0)) == 0
    assert count_inversions(np.arange(10.0)[::-1]) == 45
    assert count_inversions(np.ones(10)) == 0


def a(*xs: float) -> np.ndarray:
    return np.array(xs, dtype=float)


def test_perfect_and_reversed_orders() -> None:
    ranks = np.array([1, 2, 3])
    assert pair_metric(a(3, 2, 1), ranks) == (100.0, 3)
    assert rank_deviation(a(3, 2, 1), ranks) == (0.0, 3)
    assert pair_metric(a(1, 2, 3), ranks) == (0.0, 3)
    # by rating: third (span [2,2]) at 0 errs 2, second at 1 ok, first (span [0,0]) at 2 errs 2
    assert rank_deviation(a(1, 2, 3), ranks) == pytest.approx((100 * 4 / 2 / 3, 3))


def test_ties_in_rank_are_never_inversions() -> None:
    ranks = np.array([1, 1, 2])
    # (a, b) tied; (a, c) and (b, c) are inversions: 2 of 3 pairs
    assert pair_metric(a(1, 2, 3), ranks) == pytest.approx((100 / 3, 3))
    # spans: a, b -> [0, 1], c -> [2, 2]; by rating c@0 errs 2, b@1 ok, a@2 errs 1
    assert rank_deviation(a(1, 2, 3), ranks) == pytest.approx((50.0, 3))


def test_equal_ratings_are_not_inversions_and_keep_rank_order() -> None:
    ranks = np.array([1, 2])
    assert pair_metric(a(5, 5), ranks) == (100.0, 2)
    assert rank_deviation(a(5, 5), ranks) == (0.0, 2)


def test_unsorted_input_and_sparse_ranks() -> None:
    # same round as the reversed case, listed out of order with gaps in the ranks
    mu, ranks = a(3, 1, 2), np.array([30, 10, 20])
    assert pair_metric(mu, ranks) == (0.0, 3)
    assert rank_deviation(mu, ranks) == pytest.approx((100 * 4 / 2 / 3, 3))


def test_renormalised_ranks() -> None:
    ranks = np.array([4, 1, 4, 2, 4])  # rank_deviation's renormalisation: stable order, tie spans in it
    order = np.argsort(ranks, kind="stable")
    lo, hi = (span[order] for span in tie_spans(ranks))
    assert order.tolist() == [1, 3, 0, 2, 4]
    assert lo.tolist() == [0, 1, 2, 2, 2] and hi.tolist() == [0, 1, 4, 4, 4]


@pytest.mark.parametrize("ranks", [[1], [2, 2, 2], []])
def test_outcome_free_subsets_weigh_nothing(ranks: list[int]) -> None:
    mu = np.arange(len(ranks), dtype=float)
    assert pair_metric(mu, np.array(ranks, dtype=np.int64))[1] == 0
    assert rank_deviation(mu, np.array(ranks, dtype=np.int64))[1] == 0


def test_metrics_skip_first_tenth_and_filter_subsets() -> None:
    m = Metrics(n_rounds=20)  # rounds 0 and 1 are not scored
    mu, ranks = a(1, 2, 3), np.array([1, 2, 3])
    m.observe_many([(1, mu, ranks, np.array([9, 9, 9]))])
    assert m.scored_rounds == 0 and m.pair_all.weight == 0
    # first-timer (0 earlier rounds) excluded everywhere; only two players have >= 5 rounds
    m.observe_many([(2, a(1, 2, 3, 9), np.array([1, 2, 3, 4]), np.array([1, 5, 7, 0]))])
    assert m.scored_rounds == 1
    assert (m.pair_all.weight, m.pair_exp.weight) == (3, 2)
    assert m.pair_all.mean == 0.0 and m.pair_exp.mean == 0.0
    m.observe_many([(3, a(3, 2), np.array([1, 2]), np.array([6, 6]))])
    assert m.pair_exp.mean == pytest.approx(100 * 2 / 4)  # weighted: (0*2 + 100*2) / 4
    assert m.summary()["participations_all"] == 5


# ---- score_rounds: many rounds at once, bit for bit the per-round functions ----------------------
from hypothesis import given, settings as hsettings, strategies as st  # noqa: E402

from stream.batch.metrics import SCORES, SUBSETS, score_rounds  # noqa: E402

_round = st.integers(1, 40).flatmap(lambda n: st.tuples(
    st.lists(st.sampled_from([1400.0, 1500.0, 1500.5, 1600.0, 1750.25, -3.0]), min_size=n, max_size=n),
    st.lists(st.integers(1, 5), min_size=n, max_size=n),
    st.lists(st.integers(0, 8), min_size=n, max_size=n)))


@hsettings(max_examples=300, deadline=None)
@given(st.lists(_round, min_size=1, max_size=12))
def test_score_rounds_equals_scoring_each_round_alone(rounds: list) -> None:
    """Small rounds (padded arrays, grouped by size) and large ones (> SMALL_ROUND, one by one)
    score exactly as pair_metric / rank_deviation on each round's subsets (ties in rank and mu)."""
    mu = np.array([x for r in rounds for x in r[0]])
    ranks = np.array([x for r in rounds for x in r[1]], dtype=np.int64)
    earlier = np.array([x for r in rounds for x in r[2]], dtype=np.int64)
    offsets = np.cumsum([0] + [len(r[0]) for r in rounds])
    table = score_rounds(mu, ranks, earlier, offsets)
    assert table.shape == (len(rounds), len(SCORES))
    for k, (a_, b_) in enumerate(zip(offsets[:-1], offsets[1:])):
        for j, min_rounds in enumerate(SUBSETS):
            keep = earlier[a_:b_] >= min_rounds
            assert tuple(table[k, 2 * j:2 * j + 2]) == pair_metric(mu[a_:b_][keep], ranks[a_:b_][keep])
            assert tuple(table[k, 4 + 2 * j:6 + 2 * j]) == rank_deviation(mu[a_:b_][keep], ranks[a_:b_][keep])
