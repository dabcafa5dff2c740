"""Cheap pairwise win probabilities for scoring many pairs (the service's rating health).

:func:`stream.engine.predict.win_probability` is exact to ~1e-7 for Elo-MMR's logistic noise, at
the price of a quadrature (hundreds of evaluations per pair): the read API's ``/predict``. Rating
health scores every pair of every round the stream rates, so it takes the moment-matched
closed form instead: the performance difference ``Z + D`` (``Z ~ N(m, v)``, ``D`` the difference
of two logistic noises of scale ``s = beta sqrt(3) / pi``, variance ``2 beta^2``) is read as one
logistic of the same variance, ``P(i ahead of j) = 1 / (1 + exp(-m / (sqrt(v + 2 beta^2) sqrt(3) / pi)))``;
for Gaussian noise (Elo-MMchi) the answer ``Phi(m / sqrt(v + 2 beta^2))`` is exact.
tests/engine/test_odds.py bounds the logistic form's distance to the exact one (below 0.03: measured 0.022 at worst).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from stream.engine.predict import LOGISTIC_SCALE_PER_SD, PerformanceModel, normal_cdf


def approx_win_probability(mu_a: NDArray[np.float64], sigma_a: NDArray[np.float64], mu_b: NDArray[np.float64],
                           sigma_b: NDArray[np.float64], model: PerformanceModel) -> NDArray[np.float64]:
    """P(a finishes ahead of b), elementwise (see the module docstring)."""
    m = mu_a - mu_b
    sd = np.sqrt(sigma_a**2 + sigma_b**2 + 2.0 * model.gamma**2 + 2.0 * model.beta**2)
    if model.kind == "gaussian":
        return np.asarray(normal_cdf(m / sd), dtype=np.float64)
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-m / (sd * LOGISTIC_SCALE_PER_SD)))
