"""The matchmaker's table of Elo-MMR's win probability equals predict.win_probability."""

from __future__ import annotations

import numpy as np

from stream.engine.ladders import parse_ladders
from stream.engine.predict import PerformanceModel, outcome_model, win_probability
from stream.matchmaking.odds import ahead, lobby_odds
from tests.engine.oracles import match_quality


def test_table_matches_predict() -> None:
    rng = np.random.default_rng(7)
    for model in (outcome_model(parse_ladders("").of("x")), PerformanceModel(beta=120.0, gamma=10.0)):
        mu_a, mu_b = rng.normal(1500, 500, 2000), rng.normal(1500, 500, 2000)
        sig_a, sig_b = rng.uniform(20, 600, 2000), rng.uniform(20, 600, 2000)
        exact = win_probability(mu_a, sig_a, mu_b, sig_b, model)
        assert np.abs(ahead(mu_a, sig_a, mu_b, sig_b, model) - exact).max() < 1e-3


def test_lobby_quality_is_predicts() -> None:
    model = outcome_model(parse_ladders("").of("x"))
    mu = np.array([[1500.0, 1600.0, 1450.0, 1800.0]])
    sigma = np.array([[80.0, 120.0, 200.0, 60.0]])
    quality, beats = lobby_odds(mu, sigma, model)
    assert abs(quality[0] - match_quality(mu[0], sigma[0], model)) < 1e-3
    assert beats[0].argmax() == 3 and abs(beats[0].mean() - 0.5) < 1e-9
