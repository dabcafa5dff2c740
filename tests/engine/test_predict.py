"""Predictions (stream/engine/predict.py) against simulation from the same model."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream.engine.predict import (
    LOGISTIC_SCALE_PER_SD,
    PerformanceModel,
    logistic_difference_cdf,
    logistic_difference_pdf,
    normal_cdf,
    predict_lobby,
    rank_distribution,
    win_probability,
)
from tests.engine.oracles import expected_ranks, match_quality, pairwise_matrix

LOGISTIC = PerformanceModel(beta=125.0, gamma=26.0)
GAUSSIAN = PerformanceModel(beta=125.0, gamma=26.0, kind="gaussian")
SIM = 400_000
# 4.5 standard errors of a Bernoulli mean over SIM draws: a seeded test, failing only on a real bias.
TOL = 4.5 * 0.5 / math.sqrt(SIM)

mus = st.floats(min_value=0, max_value=3000, allow_nan=False)
sigmas = st.floats(min_value=0, max_value=500, allow_nan=False)


def simulate_ahead(ma: float, sa: float, mb: float, sb: float, model: PerformanceModel, seed: int) -> float:
    rng = np.random.default_rng(seed)

    def perf(mu: float, sigma: float) -> np.ndarray:
        skill = mu + math.sqrt(sigma**2 + model.gamma**2) * rng.standard_normal(SIM)
        if model.kind == "gaussian":
            return skill + model.beta * rng.standard_normal(SIM)
        return skill + rng.logistic(0.0, model.beta * LOGISTIC_SCALE_PER_SD, SIM)

    return float((perf(ma, sa) > perf(mb, sb)).mean())


def test_normal_cdf_matches_math_erfc() -> None:
    x = np.linspace(-8, 8, 3201)
    ref = np.array([0.5 * math.erfc(-t / math.sqrt(2)) for t in x])
    assert np.all(np.abs(normal_cdf(x) - ref) <= 1.2e-7 * ref + 1e-300)


def test_logistic_difference_closed_forms() -> None:
    x = np.linspace(-40, 40, 400_001)
    pdf = logistic_difference_pdf(x)
    dx = x[1] - x[0]
    assert float(pdf.sum() * dx) == pytest.approx(1.0, abs=1e-9)
    assert float((x**2 * pdf).sum() * dx) == pytest.approx(2 * math.pi**2 / 3, rel=1e-7)  # var = 2 * pi^2/3
    cdf = logistic_difference_cdf(x)
    assert np.allclose(np.gradient(cdf, dx), pdf, atol=1e-8)
    # continuity across the series cut-off and symmetry
    near = np.array([0.00999999, 0.01000001])
    assert abs(float(np.diff(logistic_difference_cdf(near))[0])) < 1e-8
    assert np.allclose(logistic_difference_cdf(-x) + cdf, 1.0)
    # direct check: F_D(x) = E_y[sigmoid(x + y)] over a standard logistic y
    y = np.linspace(-50, 50, 1_000_001)
    fy = np.exp(-np.abs(y)) / (1 + np.exp(-np.abs(y))) ** 2
    for x0 in (0.3, 2.0, -4.0):
        direct = float((fy / (1 + np.exp(-(x0 + y)))).sum() * (y[1] - y[0]))
        assert float(logistic_difference_cdf(x0)) == pytest.approx(direct, abs=1e-9)


@pytest.mark.parametrize("case", [
    (1600.0, 80.0, 1500.0, 80.0),     # regulars
    (1500.0, 350.0, 1400.0, 10.0),    # wide uncertainty: the other quadrature branch
    (2000.0, 0.0, 1500.0, 0.0),       # no skill uncertainty besides drift
    (1500.0, 900.0, 1450.0, 5.0),
])
@pytest.mark.parametrize("model", [LOGISTIC, GAUSSIAN], ids=["logistic", "gaussian"])
def test_win_probability_matches_simulation(case: tuple[float, float, float, float], model: PerformanceModel) -> None:
    exact = float(win_probability(*case, model))
    assert exact == pytest.approx(simulate_ahead(*case, model, seed=7), abs=TOL)


def test_quadrature_branches_agree_at_the_switch() -> None:
    s = LOGISTIC.beta * LOGISTIC_SCALE_PER_SD
    model = PerformanceModel(beta=LOGISTIC.beta)  # gamma 0: sd = sqrt(2) sigma
    sigma_at_switch = s / math.sqrt(2)
    below = win_probability(1550.0, sigma_at_switch * (1 - 1e-9), 1500.0, sigma_at_switch * (1 - 1e-9), model)
    above = win_probability(1550.0, sigma_at_switch * (1 + 1e-9), 1500.0, sigma_at_switch * (1 + 1e-9), model)
    assert float(abs(below - above)) < 1e-6


def test_logistic_is_not_the_gaussian_approximation_in_the_tails() -> None:
    """Heavy tails: a big favourite wins less often under logistic noise than under Gaussian."""
    p_log = float(win_probability(2200.0, 0.0, 1500.0, 0.0, PerformanceModel(beta=125.0)))
    p_gauss = float(win_probability(2200.0, 0.0, 1500.0, 0.0, PerformanceModel(beta=125.0, kind="gaussian")))
    assert p_log < p_gauss
    assert p_log == pytest.approx(simulate_ahead(2200.0, 0.0, 1500.0, 0.0, PerformanceModel(beta=125.0), 3), abs=TOL)


@given(mus, sigmas, mus, sigmas, st.sampled_from([LOGISTIC, GAUSSIAN]))
def test_symmetry_and_monotonicity(ma: float, sa: float, mb: float, sb: float, model: PerformanceModel) -> None:
    p = float(win_probability(ma, sa, mb, sb, model))
    q = float(win_probability(mb, sb, ma, sa, model))
    assert 0.0 <= p <= 1.0 and p + q == pytest.approx(1.0, abs=1e-6)
    assert float(win_probability(ma + 50.0, sa, mb, sb, model)) >= p - 1e-9


def test_expected_ranks_match_simulated_rank_distribution() -> None:
    mu = np.array([1800.0, 1500.0, 1500.0, 1200.0, 1650.0])
    sigma = np.array([80.0, 350.0, 60.0, 100.0, 200.0])
    dist = rank_distribution(mu, sigma, LOGISTIC, samples=100_000, seed=11)
    assert np.allclose(dist.sum(axis=1), 1.0) and np.allclose(dist.sum(axis=0), 1.0)
    simulated_mean = dist @ np.arange(1, 6)
    assert np.allclose(expected_ranks(mu, sigma, LOGISTIC), simulated_mean, atol=0.02)
    # the pairwise matrix agrees with the same simulation's marginals: P(0 ahead of 3) ~ 1
    p = pairwise_matrix(mu, sigma, LOGISTIC)
    assert np.allclose(p + p.T + np.eye(5), 1.0, atol=1e-6)
    assert p[0, 3] > 0.95


def test_rank_distribution_is_seeded() -> None:
    mu, sigma = [1500.0, 1510.0, 1490.0], [100.0, 100.0, 100.0]
    a = rank_distribution(mu, sigma, GAUSSIAN, samples=2000, seed=5)
    b = rank_distribution(mu, sigma, GAUSSIAN, samples=2000, seed=5)
    assert np.array_equal(a, b)


def test_match_quality() -> None:
    even = match_quality([1500.0] * 4, [80.0] * 4, LOGISTIC)
    assert even == pytest.approx(1.0)
    lopsided = match_quality([1000.0, 1500.0, 2000.0, 2500.0], [80.0] * 4, LOGISTIC)
    assert 0.0 < lopsided < 0.5
    assert match_quality([1500.0, 1600.0], [80.0, 80.0], LOGISTIC) > match_quality([1500.0, 1800.0], [80.0, 80.0], LOGISTIC)
    with pytest.raises(ValueError):
        match_quality([1500.0], [80.0], LOGISTIC)


def test_predict_lobby_bundle() -> None:
    pred = predict_lobby([1400.0, 1900.0, 1600.0], [80.0, 80.0, 80.0], LOGISTIC, samples=5000)
    assert pred.expected_order.tolist() == [1, 2, 0]
    assert pred.expected_rank.sum() == pytest.approx(1 + 2 + 3)
    assert pred.rank_distribution.shape == (3, 3)
    assert 0.0 < pred.quality < 1.0
    with pytest.raises(ValueError):
        predict_lobby([1500.0], [80.0], LOGISTIC)


def test_model_validation() -> None:
    with pytest.raises(ValueError):
        PerformanceModel(beta=0.0)
    with pytest.raises(ValueError):
        PerformanceModel(beta=1.0, kind="cauchy")  # type: ignore[arg-type]


def test_model_from_engine_presets() -> None:
    from stream.engine.params import preset

    mmr = preset("mmr")
    model = PerformanceModel.from_params(mmr, weight=1.0)
    assert model.kind == "logistic" and model.beta == pytest.approx(mmr.beta(1.0))
    assert model.gamma == pytest.approx(mmr.gamma(1.0, 0.0))
    assert PerformanceModel.from_params(preset("mmx")).kind == "gaussian"


@pytest.mark.parametrize("model", [LOGISTIC, GAUSSIAN])
def test_a_draw_margin_gives_tie_probabilities_that_simulation_agrees_with(model: PerformanceModel) -> None:
    """``draw_margin`` d: a pair draws when its performances are within d (what the presets that
    rate draws then rate); P(ahead), P(behind) and P(tie) sum to 1, the expected ranks (a tie
    counting half) to n(n+1)/2, and P(tie) is the simulated share of |P_a - P_b| <= d."""
    from stream.engine.predict import pair_matrices

    mu, sigma = np.array([1500.0, 1620.0, 1900.0]), np.array([60.0, 150.0, 90.0])
    ahead, tie = pair_matrices(mu, sigma, model, draw_margin=40.0)
    off = ~np.eye(3, dtype=bool)
    np.testing.assert_allclose((ahead + ahead.T + tie)[off], 1.0, atol=1e-9)
    assert (tie[off] > 0).all() and tie[0, 1] > tie[0, 2]  # closer ratings draw more often
    pred = predict_lobby(mu, sigma, model, draw_margin=40.0, samples=2000)
    assert pred.tie is not None and pred.expected_rank.sum() == pytest.approx(6.0, abs=1e-9)
    assert predict_lobby(mu, sigma, model, samples=2000).tie is None  # no margin: no draws
    rng = np.random.default_rng(3)
    skill = mu + np.sqrt(sigma**2 + model.gamma**2) * rng.standard_normal((SIM, 3))
    noise = (model.beta * rng.standard_normal((SIM, 3)) if model.kind == "gaussian"
             else rng.logistic(0.0, model.beta * LOGISTIC_SCALE_PER_SD, (SIM, 3)))
    perf = skill + noise
    simulated = float(np.mean(np.abs(perf[:, 0] - perf[:, 1]) <= 40.0))
    assert abs(tie[0, 1] - simulated) <= TOL
    with pytest.raises(ValueError):
        pair_matrices(mu, sigma, model, draw_margin=-1.0)
