"""elo-multiplayer against seed 002 (Kreimeier, "Rising from the Ranks"): its worked example and
the properties it states."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.batch.models import replay_model
from stream.contracts import RoundResult, Standing
from stream.engine.elo_multiplayer import EloMultiplayerParams, expectancy, rate_round
from stream.engine.models import MODELS
from stream.engine.ratings import Ratings

SETTINGS = settings(max_examples=40, deadline=None)
SEED_PARAMS = EloMultiplayerParams(temperature=1.0, max_gain=1.0, mu_noob=0.0)
"""The seed's choice: T = 1, max_gain = 1, everyone starts at 0."""


def ratings(mu: list[float] | np.ndarray, params: EloMultiplayerParams = SEED_PARAMS) -> Ratings:
    mu = np.asarray(mu, dtype=float)
    return Ratings(mu, np.full(mu.shape, params.sig_noob), np.zeros(mu.shape, dtype=np.int64))


def change_rating(my: float, opponent: float, result: float, t: float = 1.0, gain: float = 1.0) -> float:
    """The seed's ChangeRating for one encounter, with expectancy = Fermi(my - opponent)."""
    return gain * (result - 1.0 / (1.0 + math.exp(-(my - opponent) / t)))


def test_worked_example_beating_your_equal_wins_half_the_maximum_gain() -> None:
    """"Beating your equal, you will get 50% of the maximum possible gain (0.5 out of 1). If you
    lose the match, your loss will be 50% of the maximum possible loss (-0.5 out of -1).\""""
    after = rate_round(ratings([0.0, 0.0]), np.array([1, 2]), SEED_PARAMS).after
    assert after.mu.tolist() == [0.5, -0.5]


def test_a_draw_between_equals_changes_nothing() -> None:
    after = rate_round(ratings([0.0, 0.0]), np.array([1, 1]), SEED_PARAMS).after
    assert after.mu.tolist() == [0.0, 0.0]


@SETTINGS
@given(st.floats(-5, 5), st.floats(-5, 5), st.sampled_from([(1, 2), (2, 1), (1, 1)]))
def test_two_players_are_the_seeds_change_rating(a: float, b: float, ranks: tuple[int, int]) -> None:
    result = 1.0 if ranks[0] < ranks[1] else 0.5 if ranks[0] == ranks[1] else 0.0
    after = rate_round(ratings([a, b]), np.array(ranks), SEED_PARAMS).after
    delta = change_rating(a, b, result)
    assert after.mu[0] == pytest.approx(a + delta, abs=1e-12)
    assert after.mu[1] == pytest.approx(b - delta, abs=1e-12)  # "opponent_rating -= rating_change"


@SETTINGS
@given(st.floats(-50, 50))
def test_fermi_is_a_probability_symmetric_around_one_half(x: float) -> None:
    """f(0) = 0.5, f(-x) = 1 - f(x), increasing (strictly until it saturates), limits 0 and 1."""
    f = lambda v: float(expectancy(np.array([v]), 1.0)[0])  # noqa: E731
    assert f(0.0) == 0.5
    assert f(-x) == pytest.approx(1.0 - f(x), abs=1e-15)
    assert 0.0 <= f(x) <= 1.0
    assert f(x + 0.5) >= f(x)
    assert f(x + 0.5) > f(x) or f(x) > 1.0 - 1e-15  # strictly, until it saturates a float's step below 1


def test_weak_beating_strong_gains_most_strong_beating_weak_gains_least() -> None:
    """"Diminishing losses and gains occur for very high ranked players crushing bottom ranks,
    maximum gains and losses ... in the opposite case"."""
    upset = rate_round(ratings([-3.0, 3.0]), np.array([1, 2]), SEED_PARAMS).after.mu[0] + 3.0
    expected = rate_round(ratings([3.0, -3.0]), np.array([1, 2]), SEED_PARAMS).after.mu[0] - 3.0
    even = rate_round(ratings([0.0, 0.0]), np.array([1, 2]), SEED_PARAMS).after.mu[0]
    assert 0.99 < upset < 1.0 and 0.0 < expected < 0.01 and expected < even < upset


field = st.integers(2, 30).flatmap(lambda n: st.tuples(
    st.lists(st.floats(1000, 2000), min_size=n, max_size=n), st.lists(st.integers(1, n), min_size=n, max_size=n)))


@SETTINGS
@given(field)
def test_a_round_is_zero_sum(case: tuple[list[float], list[int]]) -> None:
    """"one player's gain is always compensated by another player's loss"."""
    mu, ranks = case
    params = EloMultiplayerParams()
    after = rate_round(ratings(mu, params), np.array(ranks), params).after
    assert float(np.sum(after.mu - np.array(mu))) == pytest.approx(0.0, abs=1e-9)


@SETTINGS
@given(st.integers(0, 2**32 - 1))
def test_newcomers_at_the_average_keep_the_mean(seed: int) -> None:
    """"If the initial PQ value of every player is set to the average of the distribution, player
    migration into the system will not change the zero mean value": over a history in which
    newcomers keep arriving, the mean rating stays mu_noob."""
    rng = np.random.default_rng(seed)
    rounds = []
    for t in range(15):
        k = int(rng.integers(2, 12))
        who = rng.choice(12 + 5 * t, k, replace=False)  # the pool grows: newcomers every round
        rounds.append(RoundResult(round_id=str(t), occurred_at=float(t), standings=[
            Standing(f"p{w}", int(r)) for w, r in zip(who.tolist(), rng.integers(1, k + 1, k).tolist())]))
    result = replay_model(rounds, MODELS["elo-multiplayer"])
    mus = np.array([mu for _, _, mu, _, _ in result.ratings()])
    assert mus.mean() == pytest.approx(1500.0, abs=1e-9)


@SETTINGS
@given(field)
def test_better_rank_never_gets_less_among_equals(case: tuple[list[float], list[int]]) -> None:
    """With everyone rated the same, the change is ordered by the rank (ties equal)."""
    _, ranks = case
    params = EloMultiplayerParams()
    mu = np.full(len(ranks), 1500.0)
    change = rate_round(ratings(mu, params), np.array(ranks), params).after.mu - mu
    order = np.argsort(ranks, kind="stable")
    assert np.all(np.diff(change[order]) <= 1e-12)
    assert np.all(np.abs(change) <= params.max_gain / 2 + 1e-9)


@SETTINGS
@given(field)
def test_order_of_the_standings_does_not_matter(case: tuple[list[float], list[int]]) -> None:
    mu, ranks = case
    params = EloMultiplayerParams()
    perm = np.random.default_rng(len(mu)).permutation(len(mu))
    a = rate_round(ratings(mu, params), np.array(ranks), params).after.mu
    b = rate_round(ratings(np.array(mu)[perm], params), np.array(ranks)[perm], params).after.mu
    assert np.allclose(a[perm], b, rtol=0, atol=1e-9)


def test_parameters_are_checked() -> None:
    with pytest.raises(ValueError):
        EloMultiplayerParams(temperature=0.0)
    with pytest.raises(ValueError):
        EloMultiplayerParams(max_gain=-1.0)
