"""The rating-only models' shared interface: same call for every model, inputs untouched, the
result independent of the standings' order and of the row-block size, newcomers' prior."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.batch.models import replay_named
from stream.engine import ratings as ratings_module
from stream.engine.bar import BarParams
from stream.engine.codeforces import CodeforcesParams
from stream.engine.glicko import GlickoParams
from stream.engine.models import MODELS
from stream.engine.ratings import Ratings, tie_spans
from stream.engine.topcoder import TopcoderParams

SETTINGS = settings(max_examples=20, deadline=None)
WITH_PERFORMANCE = {"codeforces", "topcoder"}

field = st.integers(2, 25).flatmap(lambda n: st.tuples(
    st.lists(st.floats(500, 2800), min_size=n, max_size=n),
    st.lists(st.floats(30, 350), min_size=n, max_size=n),
    st.lists(st.integers(0, 8), min_size=n, max_size=n),
    st.lists(st.integers(1, n), min_size=n, max_size=n).filter(lambda r: len(set(r)) > 1),
))


def state(case: tuple[list[float], list[float], list[int], list[int]], name: str) -> tuple[Ratings, np.ndarray]:
    """The generated players on the Elo scale (prior 1500, 350), or mapped linearly onto the
    model's own scale (TrueSkill: 25, 25/3; far outside it its float64 maths fails, as the package's)."""
    mu, sigma, rounds, ranks = case
    prior = MODELS[name].params
    mu_a, sigma_a = np.array(mu), np.array(sigma)
    if (prior.mu_noob, prior.sig_noob) != (1500.0, 350.0):
        scale = prior.sig_noob / 350.0
        mu_a, sigma_a = prior.mu_noob + (mu_a - 1500.0) * scale, sigma_a * scale
    return Ratings(mu_a, sigma_a, np.array(rounds, dtype=np.int64)), np.array(ranks)


def test_tie_spans_are_the_authors_lo_hi() -> None:
    lo, hi = tie_spans(np.array([3, 1, 3, 2, 1]))
    assert lo.tolist() == [3, 0, 3, 2, 0] and hi.tolist() == [4, 1, 4, 2, 1]


@pytest.mark.parametrize("name", sorted(MODELS))
@SETTINGS
@given(case=field)
def test_one_call_rates_a_round_and_leaves_the_input_alone(name: str, case: tuple[list[float], list[float], list[int], list[int]]) -> None:
    before, ranks = state(case, name)
    copy = Ratings(before.mu.copy(), before.sigma.copy(), before.rounds.copy())
    out = MODELS[name].rate_round(before, ranks, weight=1.5)
    assert np.array_equal(before.mu, copy.mu) and np.array_equal(before.sigma, copy.sigma)
    assert np.array_equal(out.after.rounds, copy.rounds + 1)
    assert np.all(np.isfinite(out.after.mu)) and np.all(out.after.sigma > 0)
    assert (out.performance is not None) == (name in WITH_PERFORMANCE)
    best = ranks == ranks.min()
    worst = ranks == ranks.max()
    # Whatever the model, a sole winner among equals gains and a sole loser loses.
    equal = Ratings(np.full(len(before), 1500.0), np.full(len(before), 200.0), before.rounds)
    change = MODELS[name].rate_round(equal, ranks).after.mu - 1500.0
    assert np.all(change[best] > 0) and np.all(change[worst] < 0)


# TrueSkill is left out: its team chain (the package's schedule) stops at a change <= 1e-4 after
# at most 10 sweeps, so the chain's order of tied players shows in the results (as in the package)
@pytest.mark.parametrize("name", [n for n in sorted(MODELS) if n != "trueskill"])
@SETTINGS
@given(case=field, seed=st.integers(0, 1000))
def test_the_order_of_the_standings_does_not_matter(name: str, case: tuple[list[float], list[float], list[int], list[int]], seed: int) -> None:
    before, ranks = state(case, name)
    perm = np.random.default_rng(seed).permutation(len(before))
    a = MODELS[name].rate_round(before, ranks).after
    shuffled = Ratings(before.mu[perm], before.sigma[perm], before.rounds[perm])
    b = MODELS[name].rate_round(shuffled, ranks[perm]).after
    assert np.allclose(a.mu[perm], b.mu, rtol=0, atol=1e-8)
    assert np.allclose(a.sigma[perm], b.sigma, rtol=0, atol=1e-8)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_row_blocks_do_not_change_the_result(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pairwise sums are evaluated in row blocks to bound memory: any block size, same answer."""
    rng = np.random.default_rng(5)
    n = 300
    before = Ratings(rng.normal(1500, 300, n), rng.uniform(40, 350, n), rng.integers(0, 9, n))
    ranks = rng.integers(1, 120, n)
    whole = MODELS[name].rate_round(before, ranks)
    monkeypatch.setattr(ratings_module, "BLOCK_ELEMENTS", 7 * n)
    blocked = MODELS[name].rate_round(before, ranks)
    assert np.allclose(whole.after.mu, blocked.after.mu, rtol=0, atol=1e-9)
    assert np.allclose(whole.after.sigma, blocked.after.sigma, rtol=0, atol=1e-9)


def test_newcomers_get_the_prior() -> None:
    params = GlickoParams(mu_noob=1200.0, sig_noob=200.0)
    new = Ratings.new(3, params)
    assert new.mu.tolist() == [1200.0] * 3 and new.sigma.tolist() == [200.0] * 3 and new.rounds.tolist() == [0] * 3


def test_codeforces_never_changes_sigma_and_topcoder_caps_the_change() -> None:
    rng = np.random.default_rng(1)
    before = Ratings(rng.normal(1500, 300, 50), np.full(50, 350.0), np.full(50, 20))
    ranks = np.argsort(np.argsort(before.mu)) + 1  # the weakest wins: big upsets
    cf = MODELS["codeforces"].rate_round(before, ranks).after
    assert np.array_equal(cf.sigma, before.sigma)
    tc = MODELS["topcoder"].rate_round(before, ranks).after
    cap = 150.0 + 1500.0 / 22.0  # 21 rounds played, weight 1: the weight factor of the cap is 1
    assert np.all(np.abs(tc.mu - before.mu) <= cap + 1e-9)


def test_bad_parameters_and_names_are_refused() -> None:
    for bad in (lambda: GlickoParams(beta=0.0), lambda: BarParams(kappa=0.0), lambda: CodeforcesParams(weight=0.0),
                lambda: TopcoderParams(weight_noob=1.0), lambda: GlickoParams(sig_noob=-1.0)):
        with pytest.raises(ValueError):
            bad()
    with pytest.raises(KeyError, match="known"):
        replay_named([], "elo")
