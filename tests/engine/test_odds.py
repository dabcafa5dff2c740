"""The rating health's closed-form win probability against the exact one of /predict."""

from __future__ import annotations

import numpy as np

from stream.engine.odds import approx_win_probability
from stream.engine.predict import PerformanceModel, win_probability


def test_closed_form_is_close_to_the_exact_logistic_and_equal_for_gaussian() -> None:
    rng = np.random.default_rng(7)
    mu_a, mu_b = rng.uniform(800, 2600, 400), rng.uniform(800, 2600, 400)
    sigma_a, sigma_b = rng.uniform(30, 350, 400), rng.uniform(30, 350, 400)
    for model in (PerformanceModel(beta=200.0, gamma=40.0), PerformanceModel(beta=100.0, gamma=0.0)):
        exact = win_probability(mu_a, sigma_a, mu_b, sigma_b, model)
        approx = approx_win_probability(mu_a, sigma_a, mu_b, sigma_b, model)
        assert np.max(np.abs(exact - approx)) < 0.03
        assert np.all((approx > 0.5) == (mu_a > mu_b))
    gaussian = PerformanceModel(beta=200.0, gamma=10.0, kind="gaussian")
    assert np.allclose(approx_win_probability(mu_a, sigma_a, mu_b, sigma_b, gaussian),
                       win_probability(mu_a, sigma_a, mu_b, sigma_b, gaussian), atol=1e-12)
