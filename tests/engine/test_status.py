"""Read-time status of a rating (engine.display.standing, pipeline.status): interval, provisional
status, leaderboard eligibility, and an inactive player's sigma grown by the next round's drift."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream import engine
from stream.engine.display import DisplayConfig, standing
from stream.engine.ladders import parse_ladders
from stream.pipeline.status import status_fields

DAY = 86_400.0


def test_provisional_and_eligibility_rules() -> None:
    cfg = DisplayConfig(provisional_sigma=120.0, provisional_rounds=5, min_rounds=3, active_days=7.0, max_sigma=150.0,
                        interval_z=1.5)
    mu = np.array([1500.0, 1600.0, 1700.0, 1800.0])
    sigma = np.array([100.0, 130.0, 100.0, 160.0])
    rounds = np.array([10, 10, 2, 10])
    idle = np.array([1.0, 3.0, 1.0, math.nan])
    s = standing(mu, sigma, rounds, idle, cfg)
    assert s.provisional.tolist() == [False, True, True, True]
    assert s.eligible.tolist() == [True, True, False, False]
    assert s.reasons[2] == ["fewer than 3 rounds"]
    assert s.reasons[3] == ["no round in the last 7 days", "uncertainty (sigma) above 150"]
    assert s.low.tolist() == pytest.approx((mu - 1.5 * sigma).tolist())
    assert s.high.tolist() == pytest.approx((mu + 1.5 * sigma).tolist())
    # the defaults: nobody provisional, everyone eligible, mu +/- 2 sigma
    d = standing(mu, sigma, rounds, idle, DisplayConfig())
    assert not d.provisional.any() and d.eligible.all() and d.low.tolist() == pytest.approx((mu - 2 * sigma).tolist())


@pytest.mark.parametrize("raw, error", [
    ({"interval_z": -1}, "interval_z"), ({"provisional_rounds": 1.5}, "provisional_rounds"),
    ({"max_sigma": "big"}, "max_sigma"), ({"active_days": float("nan")}, "active_days"),
    ({"min_rounds": True}, "min_rounds"),
])
def test_bad_status_settings_name_themselves(raw: dict, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        DisplayConfig.from_dict(raw)


def test_status_round_trips_through_the_display_entry() -> None:
    cfg = DisplayConfig.from_dict({"provisional_sigma": 100, "provisional_rounds": 3, "min_rounds": 2,
                                   "active_days": None, "max_sigma": 200, "interval_z": 1})
    assert DisplayConfig.from_dict(cfg.to_dict()) == cfg and cfg.interval_z == 1.0


@settings(max_examples=50, deadline=None)
@given(st.floats(30.0, 350.0), st.floats(0.0, 400.0), st.floats(0.0, 500.0), st.floats(0.0, 500.0))
def test_inactive_sigma_is_the_next_rounds_drift(sigma: float, drift: float, days_a: float, days_b: float) -> None:
    """sigma_now is the sigma the next round (weight 1) would start from after its drift: the
    engine's own diffusion of the state, and it grows with the time since the last round."""
    cfg = parse_ladders(json.dumps({"*": {"model": "mmr", "params": {"drift_per_day": drift}}})).of("x")
    params = cfg.elo_mmr
    last = 1_700_000_000.0
    state = engine.PlayerState(mu=1500.0, sigma=sigma, mu0=1500.0, w0=sigma**-2, rounds=3, last_time=last, factors=[])
    batch = engine.PlayerBatch.from_states([state])
    for days in (days_a, days_b):
        now = last + days * DAY
        (got,) = status_fields(cfg, [1500.0], [sigma], [3], [last], now)
        from stream.engine.diffusion import diffuse, gammas
        want = diffuse(batch, gammas(params, 1.0, np.array([days])), params).sigma[0]
        assert got["sigma_now"] == pytest.approx(want, rel=1e-12, abs=1e-9)
    (a,) = status_fields(cfg, [1500.0], [sigma], [3], [last], last + min(days_a, days_b) * DAY)
    (b,) = status_fields(cfg, [1500.0], [sigma], [3], [last], last + max(days_a, days_b) * DAY)
    assert b["sigma_now"] >= a["sigma_now"] >= sigma


def test_a_player_without_rating_has_no_interval() -> None:
    cfg = parse_ladders("").of("x")
    (row,) = status_fields(cfg, [None], [None], [None], [None], 0.0)
    assert row["interval"] is None and row["provisional"] is None
