"""Display ratings and tiers (stream/engine/display.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.engine.display import (
    FIXED_RANGE_MAX,
    UNPLACED,
    DisplayConfig,
    display_rating,
    next_tier,
    parse_display_configs,
    tier_indices,
    tier_names,
)
from stream.settings import Settings
from tests.engine.oracles import config_for

TIERS = (("Bronze", float("-inf")), ("Silver", 1400.0), ("Gold", 1600.0), ("Diamond", 1800.0))
CFG = DisplayConfig(mode="conservative", k=2.0, tiers=TIERS)

mus = st.floats(min_value=-2000, max_value=6000, allow_nan=False)
sigmas = st.floats(min_value=0, max_value=500, allow_nan=False)


def test_modes_on_known_values() -> None:
    mu, sigma = np.array([1500.0, 2000.0]), np.array([350.0, 80.0])
    assert np.allclose(display_rating(mu, sigma, DisplayConfig(mode="mu")), mu)
    assert np.allclose(display_rating(mu, sigma, DisplayConfig(mode="conservative", k=3)), [450.0, 1760.0])
    fixed = display_rating(mu, sigma, DisplayConfig(mode="fixed-range", center=1500, scale=200))
    assert fixed[0] == pytest.approx(FIXED_RANGE_MAX / 2)
    assert fixed[1] == pytest.approx(FIXED_RANGE_MAX / (1 + np.exp(-2.5)))


def test_fixed_range_stays_in_range_without_warnings() -> None:
    with np.errstate(all="raise"):
        out = display_rating(np.array([-1e6, 0.0, 1e6]), np.zeros(3), DisplayConfig(mode="fixed-range"))
    assert out[0] == 0.0 and out[2] == FIXED_RANGE_MAX and 0 < out[1] < FIXED_RANGE_MAX


def test_scalar_inputs_broadcast() -> None:
    assert float(display_rating(1600.0, 100.0, CFG)) == pytest.approx(1400.0)
    assert display_rating(np.array([1.0, 2.0]), 0.0, DisplayConfig(mode="mu")).shape == (2,)


@given(st.lists(st.tuples(mus, mus, sigmas), min_size=1, max_size=30),
       st.sampled_from(["mu", "conservative", "fixed-range"]))
def test_display_is_monotone_in_mu(rows: list[tuple[float, float, float]], mode: str) -> None:
    """A higher mean never displays lower at equal sigma (incentive compatibility of the shown number)."""
    a, b, s = (np.array(c) for c in zip(*rows))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    cfg = DisplayConfig(mode=mode)  # type: ignore[arg-type]
    assert np.all(display_rating(hi, s, cfg) >= display_rating(lo, s, cfg))


def test_placement_uses_lower_bound() -> None:
    # mu - 2 sigma: 1500-700=800 -> Bronze; 1700-100=1600 -> Gold (exactly at threshold); 2000-20 -> Diamond
    out = next_tier([UNPLACED] * 3, [1500.0, 1700.0, 2000.0], [350.0, 50.0, 10.0], CFG)
    assert out.tolist() == [0, 2, 3]


def test_promotion_needs_confidence() -> None:
    # mu above the Gold threshold but mu - 2 sigma is not: stays Silver.
    assert next_tier([1], [1650.0], [40.0], CFG).tolist() == [1]
    assert next_tier([1], [1650.0], [25.0], CFG).tolist() == [2]


def test_demotion_needs_confidence_and_margin() -> None:
    cfg = DisplayConfig(mode="conservative", k=2.0, tiers=TIERS, demotion_margin=50.0)
    # In Gold (1600). mu + 2 sigma = 1580: below the threshold but within the margin -> stays.
    assert next_tier([2], [1500.0], [40.0], cfg).tolist() == [2]
    # mu + 2 sigma = 1540 < 1600 - 50 -> demoted, to the tier its upper bound still reaches.
    assert next_tier([2], [1460.0], [40.0], cfg).tolist() == [1]
    # A collapse by two tiers at once.
    assert next_tier([3], [1200.0], [40.0], cfg).tolist() == [0]


def test_hysteresis_keeps_a_borderline_player() -> None:
    """The StarCraft II example: promoted at 2300 needs mu - 3 sigma >= 2300; demotion only
    once mu + 3 sigma < 2300 (mu 2450, sigma 50 stays until mu < 2150)."""
    cfg = DisplayConfig(mode="mu", k=3.0, tiers=(("Platinum", 0.0), ("Diamond", 2300.0)))
    assert next_tier([0], [2449.0], [50.0], cfg).tolist() == [0]  # 2449 - 150 < 2300: not yet
    assert next_tier([0], [2450.0], [50.0], cfg).tolist() == [1]  # exactly at the threshold: promoted
    assert next_tier([1], [2151.0], [50.0], cfg).tolist() == [1]
    assert next_tier([1], [2149.0], [50.0], cfg).tolist() == [0]


@given(st.lists(st.tuples(st.integers(-1, 3), mus, sigmas), min_size=1, max_size=40))
def test_tier_rule_properties(rows: list[tuple[int, float, float]]) -> None:
    cur, mu, sigma = (np.array(c) for c in zip(*rows))
    new = next_tier(cur, mu, sigma, CFG)
    thresholds = CFG.thresholds
    assert np.all((new >= 0) & (new < len(TIERS)))
    promoted, demoted = (cur >= 0) & (new > cur), (cur >= 0) & (new < cur)
    # promotion only with the lower bound at or above the new tier's threshold
    assert np.all(mu[promoted] - 2 * sigma[promoted] >= thresholds[new[promoted]])
    # demotion only with the upper bound below the old tier's threshold
    assert np.all(mu[demoted] + 2 * sigma[demoted] < thresholds[cur[demoted]])
    # a placed player's tier is a fixed point: applying the rule again changes nothing
    assert np.array_equal(next_tier(new, mu, sigma, CFG), new)


@given(st.lists(st.tuples(mus, sigmas), min_size=1, max_size=20), st.integers(0, 3))
def test_tier_is_monotone_in_mu(rows: list[tuple[float, float]], current: int) -> None:
    mu, sigma = (np.array(c) for c in zip(*rows))
    cur = np.full(len(mu), current)
    assert np.all(next_tier(cur, mu + 100.0, sigma, CFG) >= next_tier(cur, mu, sigma, CFG))


def test_tier_names_round_trip() -> None:
    idx = np.array([UNPLACED, 0, 3, 2])
    names = tier_names(idx, CFG)
    assert names == ["", "Bronze", "Diamond", "Gold"]
    assert tier_indices(names, CFG).tolist() == idx.tolist()
    assert tier_indices([b"Gold", None, "Nope"], CFG).tolist() == [2, UNPLACED, UNPLACED]
    assert tier_indices([], CFG).tolist() == []


def test_config_validation() -> None:
    with pytest.raises(ValueError):
        DisplayConfig(mode="elo")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        DisplayConfig(tiers=(("a", 0.0), ("b", 10.0), ("c", 5.0)))
    with pytest.raises(ValueError):
        DisplayConfig(tiers=())
    with pytest.raises(ValueError):
        DisplayConfig(scale=0.0)
    with pytest.raises(ValueError):
        DisplayConfig.from_dict({"mode": "mu", "colour": "red"})


def test_settings_json_per_ladder_with_fallback() -> None:
    raw = json.dumps({
        "blitz": {"mode": "fixed-range", "center": 1400, "scale": 250},
        "*": {"mode": "mu", "tiers": [["Low", None], ["High", 2000]]},
    })
    settings_ = Settings.from_env({"DISPLAY_CONFIG": raw})
    configs = parse_display_configs(settings_.display_config)
    assert config_for("blitz", configs).mode == "fixed-range"
    assert config_for("blitz", configs).center == 1400.0
    other = config_for("other", configs)
    assert other.mode == "mu" and other.tier_names == ("Low", "High")
    assert DisplayConfig.from_dict(other.to_dict()) == other
    assert config_for("x", parse_display_configs(Settings().display_config)) == DisplayConfig()
    assert DisplayConfig().mode == "conservative" and DisplayConfig().k == 2.0
