import math

import pytest

from stream.engine import PRESETS, Params, preset


def test_codeforces_derived_beta_gamma_match_reference():
    p = preset("paper-codeforces")
    assert p.beta() == pytest.approx(54 * math.sqrt(1 + 1 / 0.23))
    assert p.gamma() == pytest.approx(math.sqrt(0.23) * 54)
    # sigma^2 = L^2 is the fixed point of sigma^2 <- 1/(1/(sigma^2+gamma^2) + 1/beta^2)
    s2 = p.sig_limit**2
    assert 1 / (1 / (s2 + p.gamma() ** 2) + 1 / p.beta() ** 2) == pytest.approx(s2)


def test_weight_scales_weight_limit_and_drift_uses_days():
    p = Params(drift_per_day=4.0)
    assert p.beta(weight=2.0) == pytest.approx(math.sqrt(80**2 * (1 + 1 / 0.4) + 4.0 / 0.4))
    assert p.gamma(weight=2.0, elapsed_days=3.0) == pytest.approx(math.sqrt(0.4 * 80**2 + 12.0))


def test_presets():
    assert set(PRESETS) == {"mmr", "mmr-fast", "mmx", "mmx-fast", "paper-codeforces"}
    assert preset("mmr").subsample_size is None and preset("mmr").history_limit is None
    assert preset("mmr-fast").subsample_size == 100 and preset("mmr-fast").history_limit == 100
    assert preset("mmx").memoryless and not preset("mmr").memoryless
    assert Params(rho=math.inf).memoryless
    with pytest.raises(KeyError):
        preset("nope")
    with pytest.raises(ValueError):
        Params(variant="cauchy")  # type: ignore[arg-type]
