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
    assert set(PRESETS) == {"mmr", "mmr-bounded", "mmr-duel", "mmr-fast", "mmx", "mmx-fast", "paper-codeforces"}
    assert preset("mmr").subsample_size is None and preset("mmr").history_limit is None
    assert preset("mmr-fast").subsample_size == 100 and preset("mmr-fast").history_limit == 100
    assert preset("mmx").memoryless and not preset("mmr").memoryless
    assert Params(rho=math.inf).memoryless
    with pytest.raises(KeyError):
        preset("nope")
    with pytest.raises(ValueError):
        Params(variant="cauchy")  # type: ignore[arg-type]


def test_default_preset_is_the_services_and_bounds_the_state() -> None:
    """The service default (ENGINE_PRESET's default) is exact and keeps at most
    DEFAULT_HISTORY_LIMIT factors: a regular's packed state stops growing."""
    import numpy as np

    from stream.engine import DEFAULT_PRESET, PlayerBatch, rate_round
    from stream.engine.params import DEFAULT_HISTORY_LIMIT
    from stream.engine.state import pack_batch
    from stream.settings import Settings

    assert Settings().engine_preset == DEFAULT_PRESET
    params = preset(DEFAULT_PRESET)
    assert params.subsample_size is None and params.history_limit == DEFAULT_HISTORY_LIMIT
    # the authors' maths otherwise, and draws rated (the authors' code, and preset mmr, skip them)
    assert params.draws_rate and params.with_(history_limit=None, name="mmr", draws_rate=False) == preset("mmr")
    batch = PlayerBatch.new(2, params)
    sizes = []
    for k in range(DEFAULT_HISTORY_LIMIT + 20):
        batch = rate_round(batch, np.array([1 + k % 2, 2 - k % 2]), params, time=k * 3600.0).after
        sizes.append(len(pack_batch(batch)[0]))
    assert sizes[-1] == sizes[DEFAULT_HISTORY_LIMIT - 1] == 49 + 24 * DEFAULT_HISTORY_LIMIT
    assert sizes[10] < sizes[-1]
