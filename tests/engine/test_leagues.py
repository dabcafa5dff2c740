"""Leagues and divisions (seed 003): placement steps of stream/engine/display.py with promotion
confidence and a demotion margin."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream.engine.display import (
    UNPLACED,
    DisplayConfig,
    league_division,
    next_tier,
    parse_display_configs,
    tier_indices,
    tier_names,
)

LEAGUES = (("Bronze", float("-inf")), ("Silver", 1400.0), ("Gold", 1600.0), ("Diamond", 1800.0))
DIVIDED = DisplayConfig(mode="conservative", k=2.0, tiers=LEAGUES, divisions=3, demotion_margin=30.0)
LEAGUES_ONLY = DisplayConfig(mode="conservative", k=2.0, tiers=LEAGUES, demotion_margin=30.0)

mus = st.floats(min_value=-2000, max_value=6000, allow_nan=False)
sigmas = st.floats(min_value=0, max_value=500, allow_nan=False)
margins = st.floats(min_value=0, max_value=200, allow_nan=False)


def test_divisions_split_the_finite_leagues() -> None:
    assert DIVIDED.tier_names == ("Bronze", "Silver 3", "Silver 2", "Silver 1", "Gold 3", "Gold 2", "Gold 1",
                                  "Diamond")
    assert DIVIDED.thresholds[1:7] == pytest.approx([1400, 1400 + 200 / 3, 1400 + 400 / 3, 1600,
                                                     1600 + 200 / 3, 1600 + 400 / 3])
    assert LEAGUES_ONLY.tier_names == ("Bronze", "Silver", "Gold", "Diamond")
    assert [league_division(n, DIVIDED) for n in ("Gold 2", "Diamond", "Gold", "", None, "Nope", "Gold x")] == [
        ("Gold", 2), ("Diamond", None), ("Gold", None), (None, None), (None, None), (None, None), (None, None)]
    assert all(league_division(p.label, DIVIDED) == (LEAGUES[p.league][0], p.division) for p in DIVIDED.placements)


def test_placement_by_lower_bound_into_a_division() -> None:
    # mu - 2 sigma = 1700 -> Gold 2 (1666.7 <= 1700 < 1733.3)
    assert tier_names(next_tier([UNPLACED], [1800.0], [50.0], DIVIDED), DIVIDED) == ["Gold 2"]
    # promotion within a league needs the same confidence: 1740 - 2*30 = 1680 < 1733.3 -> stays Gold 2
    assert tier_names(next_tier([5], [1740.0], [30.0], DIVIDED), DIVIDED) == ["Gold 2"]
    assert tier_names(next_tier([5], [1800.0], [30.0], DIVIDED), DIVIDED) == ["Gold 1"]


def test_labels_stored_before_a_divisions_change_map_to_their_league() -> None:
    # "Gold" stored with divisions 1 -> Gold's lowest division; "Gold 2" stored with 3 -> Gold when undivided
    assert tier_indices(["Gold", "Silver 1", "", "Nope 2"], DIVIDED).tolist() == [4, 3, UNPLACED, UNPLACED]
    assert tier_indices(["Gold 2", "Diamond"], LEAGUES_ONLY).tolist() == [2, 3]


def test_divisions_in_settings_json() -> None:
    cfg = parse_display_configs('{"*": {"divisions": 3, "tiers": [["Bronze", null], ["Silver", 1400], '
                                '["Gold", 1600], ["Diamond", 1800]]}}')["*"]
    assert cfg.divisions == 3 and cfg.to_dict()["divisions"] == 3
    assert DisplayConfig.from_dict(cfg.to_dict()) == cfg
    for bad in (0, 11, 2.5, True):
        with pytest.raises(ValueError, match="divisions"):
            DisplayConfig(divisions=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unique"):
        DisplayConfig(tiers=(("A", 0.0), ("B", 10.0), ("C", 20.0), ("B 1", 30.0)), divisions=2)


@given(st.lists(st.tuples(st.integers(-1, 7), mus, sigmas), min_size=1, max_size=40), margins)
def test_divisions_never_change_the_league(rows: list[tuple[int, float, float]], margin: float) -> None:
    """The league of the division rule equals the league rule run on leagues alone."""
    divided = DisplayConfig(k=2.0, tiers=LEAGUES, divisions=3, demotion_margin=margin)
    leagues = DisplayConfig(k=2.0, tiers=LEAGUES, demotion_margin=margin)
    cur, mu, sigma = (np.array(c) for c in zip(*rows))
    league_of = np.array([p.league for p in divided.placements])
    current_league = np.where(cur >= 0, league_of[np.maximum(cur, 0)], UNPLACED)
    new = next_tier(cur, mu, sigma, divided)
    assert np.array_equal(league_of[new], next_tier(current_league, mu, sigma, leagues))


@given(st.lists(st.tuples(st.integers(-1, 7), mus, sigmas), min_size=1, max_size=40), margins)
def test_promotion_needs_confidence_and_demotion_a_margin(rows: list[tuple[int, float, float]],
                                                          margin: float) -> None:
    cfg = DisplayConfig(k=2.0, tiers=LEAGUES, divisions=3, demotion_margin=margin)
    cur, mu, sigma = (np.array(c) for c in zip(*rows))
    new = next_tier(cur, mu, sigma, cfg)
    thresholds = cfg.thresholds
    promoted, demoted = (cur >= 0) & (new > cur), (cur >= 0) & (new < cur)
    assert np.all(mu[promoted] - 2 * sigma[promoted] >= thresholds[new[promoted]])
    assert np.all(mu[demoted] + 2 * sigma[demoted] < thresholds[cur[demoted]] - margin)
    assert np.array_equal(next_tier(new, mu, sigma, cfg), new)  # a fixed point


@given(st.lists(st.tuples(mus, sigmas), min_size=2, max_size=60), st.integers(-1, 7),
       st.floats(min_value=1, max_value=200, allow_nan=False))
def test_no_oscillation(path: list[tuple[float, float]], start: int, margin: float) -> None:
    """Along any rating path, a promotion followed later by a demotion back below it needs the
    player's bounds to move apart by more than the margin: jitter smaller than the margin
    (plus the confidence widths) never flips a player up and down."""
    cfg = DisplayConfig(k=2.0, tiers=LEAGUES, divisions=3, demotion_margin=margin)
    thresholds = cfg.thresholds
    tier = start
    promoted_at: dict[int, float] = {}  # step -> lower bound when promoted into it
    for mu, sigma in path:
        new = int(next_tier([tier], [mu], [sigma], cfg)[0])
        if tier >= 0 and new > tier:
            for step in range(tier + 1, new + 1):
                promoted_at[step] = mu - 2 * sigma
        if tier >= 0 and new < tier:
            for step in range(new + 1, tier + 1):
                if step in promoted_at:
                    assert promoted_at[step] - (mu + 2 * sigma) > margin
                    assert promoted_at[step] >= thresholds[step] > mu + 2 * sigma + margin
                    del promoted_at[step]
        tier = new


@given(st.floats(min_value=1300, max_value=1900, allow_nan=False), st.floats(min_value=0, max_value=29.9),
       st.floats(min_value=5, max_value=60, allow_nan=False), st.integers(2, 30))
def test_a_jittering_player_settles(mu: float, jitter: float, sigma: float, steps: int) -> None:
    """mu alternating within +-jitter/2 (jitter below the 30-point margin): at most one move
    after the first placement, never back."""
    tiers = [int(next_tier([UNPLACED], [mu], [sigma], DIVIDED)[0])]
    for i in range(steps):
        tiers.append(int(next_tier([tiers[-1]], [mu + (jitter / 2 if i % 2 else -jitter / 2)], [sigma],
                                   DIVIDED)[0]))
    moves = [b - a for a, b in zip(tiers, tiers[1:]) if b != a]
    assert len(moves) <= 1
