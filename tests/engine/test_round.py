"""rate_round / phase_one / phase_two: basic behaviour and the split-call equivalence."""

import math

import numpy as np
import pytest

from stream.engine import (
    OutcomeFree,
    PlayerBatch,
    elapsed_days,
    phase_one,
    phase_two,
    preset,
    rate_round,
)

DAY = 86_400.0


def test_outcome_free_rounds_raise():
    p = preset("mmr")
    with pytest.raises(OutcomeFree):
        rate_round(PlayerBatch.new(1, p), np.array([1]), p, time=0.0)
    with pytest.raises(OutcomeFree):  # mmr keeps the authors' skip of a draw
        rate_round(PlayerBatch.new(4, p), np.array([2, 2, 2, 2]), p, time=0.0)
    with pytest.raises(OutcomeFree):  # one player is outcome free for every preset
        rate_round(PlayerBatch.new(1, preset("mmr-bounded")), np.array([1]), preset("mmr-bounded"), time=0.0)


def test_elapsed_days_newcomers_zero():
    d = elapsed_days(np.array([np.nan, 0.0, DAY]), 3 * DAY)
    assert d.tolist() == [0.0, 3.0, 2.0]


def rated_batch(p, n: int, seed: int) -> tuple[PlayerBatch, np.random.Generator]:
    """n players after three random rounds (histories to diffuse and fold), and the generator."""
    rng = np.random.default_rng(seed)
    b = PlayerBatch.new(n, p)
    for t in range(3):
        b = rate_round(b, rng.integers(1, 30, n), p, time=t * DAY).after
    return b, rng


@pytest.mark.parametrize("name", ["mmr", "mmx", "mmr-fast", "paper-codeforces"])
def test_split_call_equals_rate_round(name):
    """The pipeline's two halves (phase two on arbitrary sub-batches) give the same floats."""
    p = preset(name)
    b, rng = rated_batch(p, 40, seed=3)
    ranks = rng.integers(1, 30, 40)
    whole = rate_round(b, ranks, p, weight=0.7, time=9 * DAY)
    perf = phase_one(b.mu, b.sigma, elapsed_days(b.last_time, 9 * DAY), ranks, p, weight=0.7)
    np.testing.assert_array_equal(perf, whole.performance)
    halves = [np.arange(0, 17), np.arange(17, 40)]
    for rows in halves:
        part = phase_two(b.take(rows), perf[rows], p, weight=0.7, time=9 * DAY)
        np.testing.assert_array_equal(part.mu, whole.after.mu[rows])
        np.testing.assert_array_equal(part.sigma, whole.after.sigma[rows])
        np.testing.assert_array_equal(part.w0, whole.after.w0[rows])
    assert (whole.after.rounds == 4).all() and (whole.after.last_time == 9 * DAY).all()


@pytest.mark.parametrize("name", ["mmr", "mmx", "mmr-fast", "paper-codeforces"])
def test_rounds_of_different_weights_and_times_in_one_call(name):
    """Phase two of several rounds' players in one call (per-row weight and time, as the
    pipeline batches them) gives each row the floats of its round's lone call."""
    p = preset(name)
    b, rng = rated_batch(p, 30, seed=5)
    perf = rng.normal(1500.0, 300.0, 30)
    rounds = [(np.arange(0, 12), 0.7, 5 * DAY), (np.arange(12, 20), 1.0, 6.5 * DAY), (np.arange(20, 30), 2.5, 9 * DAY)]
    weight = np.concatenate([np.full(len(rows), w) for rows, w, _ in rounds])
    time = np.concatenate([np.full(len(rows), t) for rows, _, t in rounds])
    together = phase_two(b, perf, p, weight=weight, time=time)
    for rows, w, t in rounds:
        alone = phase_two(b.take(rows), perf[rows], p, weight=w, time=t)
        for name_ in ("mu", "sigma", "mu0", "w0", "last_time", "rounds"):
            np.testing.assert_array_equal(getattr(together, name_)[rows], getattr(alone, name_), err_msg=name_)
        width = alone.p.shape[1]
        for name_ in ("p", "w_arg", "w_out"):
            np.testing.assert_array_equal(getattr(together, name_)[rows, :width], getattr(alone, name_), err_msg=name_)


def test_newcomers_first_round_symmetric_and_ordered():
    p = preset("mmr")
    r = rate_round(PlayerBatch.new(5, p), np.array([1, 2, 3, 4, 5]), p, time=0.0)
    assert np.all(np.diff(r.performance) < 0) and np.all(np.diff(r.after.mu) < 0)
    # symmetric field: performances symmetric around the prior mean
    assert r.performance[0] - 1500 == pytest.approx(1500 - r.performance[-1], abs=1e-8)
    assert r.after.mu[2] == pytest.approx(1500, abs=1e-8)


def test_perf_ceiling_clips_logistic_only():
    ranks = np.array([1, 2, 3])
    for name, clipped in (("mmr", True), ("mmx", False)):
        p = preset(name)
        perf = phase_one(np.full(3, 1500.0), np.full(3, 350.0), np.zeros(3), ranks, p, perf_ceiling=1600)
        assert bool(perf.max() == 1600.0) is clipped


def test_history_bound_folds_oldest():
    p = preset("mmr").with_(history_limit=3)
    b = PlayerBatch.new(4, p)
    for t in range(6):
        b = rate_round(b, np.array([1, 2, 3, 4]), p, time=t * DAY).after
    assert b.n_factors.tolist() == [3, 3, 3, 3]
    assert np.all(np.isfinite(b.mu)) and np.all(np.diff(b.mu) < 0)
    assert math.isfinite(float(b.w0.sum()))
