"""Seasons (stream.engine.seasons): the soft reset at a player's first round of a new season is one
function every rating entry point runs, so rating rounds many per call equals rating them one by
one, a player who sits a season out is reset at his return, and nobody is touched up front."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.engine import PlayerBatch, RoundSpec, phase_two, preset, rate_round, rate_rounds
from stream.engine.ladders import LaddersError, parse_ladders
from stream.engine.season_schedule import Seasons, entering, parse_time, season_of
from stream.engine.seasons import reset_rows, reset_targets

DAY = 86400.0
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
SEASONS = Seasons(starts=(T0 + 10 * DAY, T0 + 20 * DAY), names=("S1", "S2"), sigma_to=250.0, sigma_share=0.5,
                  mu_pull=0.25, centre=1400.0)


def params(name: str = "mmr-bounded", seasons: Seasons | None = SEASONS):
    return preset(name).with_(season=seasons)


def test_season_of_counts_starts_at_or_before() -> None:
    times = np.array([T0, T0 + 10 * DAY, T0 + 15 * DAY, T0 + 20 * DAY, math.nan])
    assert season_of(times, SEASONS).tolist() == [0, 1, 1, 2, -1]
    assert entering(np.array([T0, T0 + 11 * DAY, math.nan]), np.full(3, T0 + 12 * DAY), SEASONS).tolist() == \
        [True, False, False]


def test_parse_time_and_errors() -> None:
    assert parse_time("2026-01-01T00:00:00Z", "x") == T0
    assert parse_time(T0, "x") == T0
    with pytest.raises(ValueError, match="x: not an ISO 8601"):
        parse_time("2026-01-01", "x")  # no zone: ambiguous


def test_reset_targets_raise_sigma_and_pull_mu() -> None:
    mu, sigma = reset_targets(np.array([1800.0, 1000.0]), np.array([100.0, 300.0]), SEASONS, 1500.0,
                              np.full(2, T0 + 12 * DAY))
    assert mu.tolist() == [1800.0 + 0.25 * (1400.0 - 1800.0), 1000.0 + 0.25 * 400.0]
    assert sigma[0] == pytest.approx(math.sqrt(100.0**2 + 0.5 * (250.0**2 - 100.0**2)))
    assert sigma[1] == 300.0  # never lowered


def _played(params_, n: int = 6, rounds: int = 8) -> PlayerBatch:
    """n players after some rounds of the first season (before the schedule's first start: S0)."""
    rng = np.random.default_rng(3)
    batch = PlayerBatch.new(n, params_)
    specs = [RoundSpec(players=rng.permutation(n)[:3], ranks=np.arange(3), time=T0 + k * 3600.0)
             for k in range(rounds)]
    return rate_rounds(batch, specs, params_).after


@pytest.mark.parametrize("name", ["mmr-bounded", "mmr", "mmx"])
def test_reset_moves_the_whole_belief(name: str) -> None:
    p = params(name)
    batch = _played(p)
    after = batch.copy()
    rows = np.arange(len(batch))
    reset_rows(after, rows, np.full(len(batch), T0 + 12 * DAY), p)
    mu, sigma = reset_targets(batch.mu, batch.sigma, SEASONS, p.mu_noob, np.full(len(batch), T0 + 12 * DAY))
    np.testing.assert_array_equal(after.mu, mu)
    np.testing.assert_array_equal(after.sigma, sigma)
    assert (after.sigma > batch.sigma).all()
    # untouched within the season they played in
    same = batch.copy()
    reset_rows(same, rows, np.full(len(batch), T0 + DAY), p)
    np.testing.assert_array_equal(same.mu, batch.mu)
    np.testing.assert_array_equal(same.mu0, batch.mu0)


def test_no_schedule_rates_as_before() -> None:
    base = preset("mmr-bounded")
    batch = _played(base)
    with_empty = params(seasons=Seasons())
    ranks = np.array([0, 1, 2, 3, 4, 5])
    a = rate_round(batch, ranks, base, time=T0 + 30 * DAY)
    b = rate_round(batch, ranks, with_empty, time=T0 + 30 * DAY)
    np.testing.assert_array_equal(a.after.mu, b.after.mu)
    np.testing.assert_array_equal(a.after.sigma, b.after.sigma)


def test_season_reset_changes_the_round() -> None:
    p = params()
    batch = _played(p)
    ranks = np.arange(len(batch))
    plain = rate_round(batch, ranks, preset("mmr-bounded"), time=T0 + 12 * DAY)
    reset = rate_round(batch, ranks, p, time=T0 + 12 * DAY)
    assert (reset.after.sigma > plain.after.sigma).all()
    assert not np.allclose(reset.after.mu, plain.after.mu)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7), st.integers(0, 7), st.floats(0.0, 30.0)),
                min_size=1, max_size=25),
       st.sampled_from(["mmr-bounded", "mmr", "mmx"]))
def test_many_per_call_equals_one_by_one(raw: list[tuple[int, int, int, float]], name: str) -> None:
    """rate_rounds (waves, the reset per wave) equals rate_round per round (reset by phase_two)."""
    p = params(name)
    specs, t = [], T0
    for a, b, c, step in raw:
        players = np.array(sorted({a, b, c}))
        if len(players) < 2:
            continue
        t += step * DAY / 3
        specs.append(RoundSpec(players=players, ranks=np.arange(len(players)), time=t))
    batch = PlayerBatch.new(8, p)
    many = rate_rounds(batch, specs, p).after
    one = batch
    for spec in specs:
        upd = rate_round(one.take(spec.players), spec.ranks, p, time=spec.time)
        one = one.copy()
        one.put(spec.players, upd.after)
    np.testing.assert_allclose(many.mu, one.mu, rtol=0, atol=1e-9)
    np.testing.assert_allclose(many.sigma, one.sigma, rtol=0, atol=1e-9)


def test_phase_two_resets_like_phase_one_reads() -> None:
    """The pipeline's phase two (engine.phase_two on the stored state) resets the rows the
    performance was computed for: it equals rate_round's posterior."""
    p = params()
    batch = _played(p)
    ranks = np.arange(len(batch))
    whole = rate_round(batch, ranks, p, time=T0 + 25 * DAY)
    two = phase_two(batch, whole.performance, p, time=T0 + 25 * DAY)
    np.testing.assert_array_equal(two.mu, whole.after.mu)
    np.testing.assert_array_equal(two.sigma, whole.after.sigma)


def test_ladders_seasons_entry() -> None:
    raw = {"s": {"model": "mmr", "seasons": {"schedule": [{"name": "S1", "start": "2026-01-11T00:00:00Z"}],
                                            "sigma_to": 250, "mu_pull": 0.25}}, "plain": {}}
    ladders = parse_ladders(json.dumps(raw))
    season = ladders.of("s").elo_mmr.season
    assert season is not None and season.starts == (T0 + 10 * DAY,) and season.names == ("S1",)
    assert ladders.of("plain").elo_mmr.season is None
    # the schedule is not part of the parameters' digest (the maths between season starts)
    assert ladders.of("s").digest == parse_ladders(json.dumps({"s": {"model": "mmr"}})).of("s").digest
    bad = {"s": {"model": "mmr", "seasons": {"schedule": [{"name": "S1", "start": "soon"}]}}}
    with pytest.raises(LaddersError, match=r"LADDERS\['s'\].seasons: schedule\[0\].start"):
        parse_ladders(json.dumps(bad))
    with pytest.raises(LaddersError, match="mu_pull must be in"):
        parse_ladders(json.dumps({"s": {"seasons": {"mu_pull": 2}}}))
    with pytest.raises(LaddersError, match="rating-only"):
        parse_ladders(json.dumps({"s": {"model": "glicko", "seasons": {}}}))
    with pytest.raises(LaddersError, match="strictly increasing"):
        parse_ladders(json.dumps({"s": {"seasons": {"schedule": [{"name": "a", "start": 5}, {"name": "b", "start": 5}]}}}))


def test_placement_shows_no_league_then_places_by_the_confident_rule() -> None:
    from stream.engine.display import UNPLACED, DisplayConfig, league_division, next_tier, tier_indices, tier_names
    from stream.engine.seasons import season_next_tier

    cfg = DisplayConfig()
    seasons = Seasons(starts=(T0,), names=("S1",), placement_rounds=3)
    mu, sigma = np.array([2000.0, 2000.0]), np.array([40.0, 40.0])
    placed = next_tier(np.array([UNPLACED, UNPLACED]), mu, sigma, cfg)
    tiers = np.array([UNPLACED, 0])  # a newcomer, and a Bronze player entering the season
    starting = np.array([False, True])
    shown = []
    for _ in range(3):
        tiers = season_next_tier(tiers, starting, mu, sigma, cfg, seasons)
        shown.append(tier_names(tiers, cfg))
        starting = np.array([False, False])
        tiers = tier_indices(shown[-1], cfg)  # through the stored labels, as the pipeline reads them back
    assert shown[0] == ["Placement 1", "Placement 1"] and shown[1] == ["Placement 2", "Placement 2"]
    assert league_division("Placement 2", cfg) == (None, None)
    np.testing.assert_array_equal(tiers, placed)  # the third round places both as unplaced players are placed
    # a placed player within the season keeps the hysteresis rule
    again = season_next_tier(tiers, np.array([False, False]), mu - 300, sigma, cfg, seasons)
    np.testing.assert_array_equal(again, next_tier(tiers, mu - 300, sigma, cfg))
    # no placement configured: the plain rule, entering or not
    none = Seasons(starts=(T0,), names=("S1",))
    np.testing.assert_array_equal(season_next_tier(np.array([0, 0]), np.array([True, False]), mu, sigma, cfg, none),
                                  next_tier(np.array([0, 0]), mu, sigma, cfg))


@pytest.mark.parametrize("name", ["mmr-bounded", "mmx"])
def test_team_rounds_many_per_call_equal_one_by_one_across_seasons(name: str) -> None:
    """Elo-MMR for teams: rate_rounds_with_teams (the reset per wave) equals rate_team_round per
    round (its prior reset by ``seasoned``, its update by phase_two) across both season starts."""
    from stream.engine.teams import TeamRoundSpec, rate_rounds_with_teams, rate_team_round

    p = params(name)
    rng = np.random.default_rng(5)
    specs = []
    for k in range(30):
        players = rng.permutation(10)[:6]
        shares = rng.choice([1.0, 0.5], size=6)
        specs.append(TeamRoundSpec(players=players, ranks=np.repeat([1, 2], 3), entry=np.repeat([0, 1], 3),
                                   entry_ranks=np.array([1, 2]), weights=shares, time=T0 + k * DAY))
    batch = PlayerBatch.new(10, p)
    many = rate_rounds_with_teams(batch, specs, p).after
    one = batch
    for spec in specs:
        upd = rate_team_round(one.take(spec.players), spec.entry, spec.entry_ranks, spec.weights, p, time=spec.time)
        one = one.copy()
        one.put(spec.players, upd.after)
    np.testing.assert_allclose(many.mu, one.mu, rtol=0, atol=1e-9)
    np.testing.assert_allclose(many.sigma, one.sigma, rtol=0, atol=1e-9)
    plain = rate_rounds_with_teams(batch, specs, preset(name)).after
    assert np.abs(plain.sigma - many.sigma).max() > 1.0  # the seasons moved them


def test_each_season_may_pull_toward_its_own_centre() -> None:
    seasons = Seasons.from_dict({"schedule": [{"name": "S1", "start": T0 + 10 * DAY, "centre": 1600.0},
                                              {"name": "S2", "start": T0 + 20 * DAY}], "mu_pull": 0.5, "centre": 1450.0})
    assert seasons.to_dict()["schedule"][0]["centre"] == 1600.0 and "centre" not in seasons.to_dict()["schedule"][1]
    mu, _ = reset_targets(np.array([1800.0, 1800.0]), np.array([80.0, 80.0]), seasons, 1500.0,
                          np.array([T0 + 11 * DAY, T0 + 21 * DAY]))
    assert mu.tolist() == [1700.0, 1625.0]  # S1's own 1600; S2 the ladder's configured 1450
    with pytest.raises(ValueError, match=r"schedule\[0\].centre"):
        Seasons.from_dict({"schedule": [{"name": "S1", "start": T0, "centre": "mean"}]})


def test_with_started_merges_the_seasons_of_record() -> None:
    """The configuration's seasons stand; Redis's are added by start (a name both hold is one
    season); a merge whose starts would not increase is refused; ``with_schedules`` gives a
    ladder resolved by the fallback its own entry, and refuses a rating-only model."""
    import json

    import pytest

    from stream.engine.ladders import parse_ladders, with_schedules
    from stream.engine.season_schedule import Seasons, with_started

    base = Seasons(starts=(100.0,), names=("S1",), sigma_to=250.0, centres=(1450.0,))
    merged = with_started(base, [{"name": "S1", "start": 100.0}, {"name": "S2", "start": 200.5, "centre": 1500.0}])
    assert merged.names == ("S1", "S2") and merged.starts == (100.0, 200.5) and merged.centres == (1450.0, 1500.0)
    assert merged.sigma_to == 250.0 and with_started(base, []) is base
    with pytest.raises(ValueError):
        with_started(base, [{"name": "S0", "start": 100.0}])
    ladders = parse_ladders(json.dumps({"*": {"model": "mmr", "seasons": {"sigma_to": 200}}, "g": {"model": "glicko"}}))
    live = with_schedules(ladders, {"new": [{"name": "S1", "start": 5.0}]})
    assert live.of("new").elo_mmr.season.names == ("S1",) and live.of("other").elo_mmr.season.names == ()
    assert live.of("new").digest == ladders.of("new").digest  # the digest is the maths between starts
    with pytest.raises(ValueError, match="rating-only"):
        with_schedules(ladders, {"g": [{"name": "S1", "start": 5.0}]})
