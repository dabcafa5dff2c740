"""Elo-MMR for teams (stream/engine/teams.py): the properties its docstring claims, and replay
of team rounds through it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.batch import read_rounds, replay
from stream.engine import PlayerBatch, preset, rate_round
from stream.engine.round import phase_two
from stream.engine.teams import rate_team_round
from tests.engine.oracles import final_state

PARAMS = preset("mmr")
TIME = 1.7e9


@st.composite
def batches(draw: st.DrawFn, n: int) -> PlayerBatch:
    batch = PlayerBatch.new(n, PARAMS)
    batch.mu = np.array(draw(st.lists(st.floats(500, 2500), min_size=n, max_size=n)))
    batch.sigma = np.array(draw(st.lists(st.floats(40, 350), min_size=n, max_size=n)))
    batch.mu0, batch.w0 = batch.mu.copy(), batch.sigma**-2.0  # a consistent prior: N(mu, sigma^2)
    seen = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    batch.last_time = np.where(seen, TIME - 86_400.0 * np.array(draw(st.lists(st.integers(0, 400), min_size=n, max_size=n))),
                               np.nan)
    return batch


@st.composite
def team_rounds(draw: st.DrawFn) -> tuple[PlayerBatch, np.ndarray, np.ndarray, np.ndarray]:
    sizes = draw(st.lists(st.integers(1, 4), min_size=2, max_size=6))
    k = len(sizes)
    ranks = np.array(draw(st.lists(st.integers(1, k), min_size=k, max_size=k)))
    if (ranks == ranks[0]).all():
        ranks[0] += 1
    n = sum(sizes)
    weights = np.array(draw(st.lists(st.sampled_from([1.0, 1.0, 0.5, 0.1]), min_size=n, max_size=n)))
    return draw(batches(n)), np.repeat(np.arange(k), sizes), ranks, weights


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 12).flatmap(lambda n: st.tuples(batches(n), st.lists(st.integers(1, n), min_size=n, max_size=n))))
def test_teams_of_one_equal_the_individual_path_exactly(case: tuple[PlayerBatch, list[int]]) -> None:
    batch, rank_list = case
    ranks = np.array(rank_list)
    if (ranks == ranks[0]).all():
        ranks[0] += 1
    n = len(ranks)
    alone = rate_round(batch, ranks, PARAMS, time=TIME)
    teams = rate_team_round(batch, np.arange(n), ranks, np.ones(n), PARAMS, time=TIME)
    assert np.array_equal(alone.performance, teams.performance)
    for name in ("mu", "sigma", "rounds", "last_time"):
        assert np.array_equal(getattr(alone.after, name), getattr(teams.after, name)), name
    assert all(np.array_equal(a, b) for a, b in zip(alone.after.to_states(), teams.after.to_states()))


@settings(max_examples=60, deadline=None)
@given(team_rounds(), st.data())
def test_a_better_team_rank_never_lowers_a_members_rating(case: tuple[PlayerBatch, np.ndarray, np.ndarray, np.ndarray],
                                                          data: st.DataObject) -> None:
    batch, entry, ranks, weights = case
    team = data.draw(st.integers(0, len(ranks) - 1))
    better = ranks.copy()
    better[team] = data.draw(st.integers(1, int(ranks[team])))
    if (better == better[0]).all():
        return
    worse_after = rate_team_round(batch, entry, ranks, weights, PARAMS, time=TIME).after.mu
    better_after = rate_team_round(batch, entry, better, weights, PARAMS, time=TIME).after.mu
    members = entry == team
    assert (better_after[members] >= worse_after[members] - 1e-9).all()


MU_RESOLUTION = 1e-9
"""Rating points two phase-two results may differ by and still count as equal: the new mu is the
root of its tanh equation by Newton/Halley steps stopped at a step <= ``NEWTON_STEP_TOL`` (1e-7),
which leaves an error O(step^2) < 1e-12, plus a few ulps of |mu| <= ~3000 (~5e-13)."""


def _moves(before: PlayerBatch, after: PlayerBatch) -> tuple[np.ndarray, np.ndarray]:
    return np.abs(after.mu - before.mu), np.abs(after.sigma - before.sigma)


@settings(max_examples=60, deadline=None)
@given(team_rounds(), st.data())
def test_a_team_that_played_a_smaller_share_moves_less(case: tuple[PlayerBatch, np.ndarray, np.ndarray, np.ndarray],
                                                       data: st.DataObject) -> None:
    """What the model guarantees about shares.  Scaling the shares of all of one team's members
    by c <= 1 leaves the team's belief (weighted averages, and an individual's own values)
    and so its performance p_T and every member's p_i unchanged (c a power of 2: to the bit);
    each member's factor then only gets the noise of a lighter round, beta(w c) >= beta(w), and
    less drift, so he moves less towards the same p_i.  For a team of one this is "a smaller
    share of the match moves a player less".  A member's share alone does not have that
    property: it moves mu_T and with it the team's surprise p_T - mu_T
    (test_a_members_share_changes_his_teams_surprise)."""
    batch, entry, ranks, weights = case
    team = data.draw(st.integers(0, len(ranks) - 1))
    scale = 2.0 ** -data.draw(st.integers(1, 13))  # down to ~1e-4
    lighter = np.where(entry == team, weights * scale, weights)
    full = rate_team_round(batch, entry, ranks, weights, PARAMS, time=TIME)
    light = rate_team_round(batch, entry, ranks, lighter, PARAMS, time=TIME)
    assert np.array_equal(full.performance, light.performance)
    members = entry == team
    mu_full, sigma_full = _moves(batch, full.after)
    mu_light, sigma_light = _moves(batch, light.after)
    assert (mu_light[members] <= mu_full[members] + MU_RESOLUTION).all()
    assert (sigma_light[members] <= sigma_full[members] + MU_RESOLUTION).all()
    others = ~members  # the other teams' updates do not depend on this team's shares
    assert np.array_equal(full.after.mu[others], light.after.mu[others])


@settings(max_examples=60, deadline=None)
@given(team_rounds(), st.data())
def test_at_a_fixed_performance_a_smaller_share_moves_a_player_less(
        case: tuple[PlayerBatch, np.ndarray, np.ndarray, np.ndarray], data: st.DataObject) -> None:
    """Phase two alone: given the performance a member is credited, his share enters only
    through the noise beta(w) and drift gamma(w) of his factor, and a smaller share moves him
    less (in mu and sigma)."""
    batch, entry, ranks, weights = case
    player = data.draw(st.integers(0, len(entry) - 1))
    perf = rate_team_round(batch, entry, ranks, weights, PARAMS, time=TIME).performance
    full, little = weights.copy(), weights.copy()
    full[player], little[player] = 1.0, data.draw(st.sampled_from([1e-4, 0.01, 0.1, 0.5]))
    mu_full, sigma_full = _moves(batch, phase_two(batch, perf, PARAMS, weight=full, time=TIME))
    mu_little, sigma_little = _moves(batch, phase_two(batch, perf, PARAMS, weight=little, time=TIME))
    assert mu_little[player] <= mu_full[player] + MU_RESOLUTION
    assert sigma_little[player] <= sigma_full[player] + MU_RESOLUTION


def test_a_members_share_changes_his_teams_surprise() -> None:
    """Why a member's own share is not monotone (hypothesis' counterexample to the claim "a
    smaller share moves a player less"): a strong member (1721) of a team with a weak one (500,
    share 0.1) beats a team of two 500s.  At share 1 his team is expected to win (mu_T = 1610),
    its surprise p_T - mu_T is ~0.01; at share 1e-4 it is ~500 (mu_T = 501) and winning is a
    surprise of ~77.  Phase two moves him by about surprise x (pi^2/6)/beta^2(w) / (1/sigma'^2 +
    (pi^2/6)/beta^2(w)), ~ w for small w: the 5000-fold surprise outweighs the 5000-fold
    lighter factor, and the small share moves him more."""
    batch = PlayerBatch.new(4, PARAMS)
    batch.mu, batch.sigma = np.array([500.0, 500, 1721, 500]), np.array([40.0, 40, 121, 40])
    batch.mu0, batch.w0 = batch.mu.copy(), batch.sigma**-2.0
    entry, ranks = np.array([0, 0, 1, 1]), np.array([2, 1])
    full = rate_team_round(batch, entry, ranks, np.array([1, 1, 1, 0.1]), PARAMS, time=TIME)
    little = rate_team_round(batch, entry, ranks, np.array([1, 1, 1e-4, 0.1]), PARAMS, time=TIME)
    surprise_full = full.performance[2] - batch.mu[2]  # = p_T - mu_T
    surprise_little = little.performance[2] - batch.mu[2]
    assert 0 < 1000 * surprise_full < surprise_little
    assert full.after.mu[2] - batch.mu[2] < little.after.mu[2] - batch.mu[2] - 1000 * MU_RESOLUTION
    # at the same performance the lighter factor moves him far less
    lighter = phase_two(batch, full.performance, PARAMS, weight=np.array([1, 1, 1e-4, 0.1]), time=TIME)
    assert 0 < lighter.mu[2] - batch.mu[2] < 1e-3 * (full.after.mu[2] - batch.mu[2])


def test_replay_rates_team_rounds_with_elo_mmr_teams(tmp_path: Path) -> None:
    path = tmp_path / "teams.jsonl"
    rounds = [
        {"round_id": "r1", "ladder": "L", "occurred_at": TIME, "standings": [
            {"team": "red", "players": ["a", {"player": "b", "weight": 0.5}], "rank": 1},
            {"team": "blue", "players": ["c", "d"], "rank": 2}]},
        {"round_id": "r2", "ladder": "L", "occurred_at": TIME + 86_400, "standings": [
            {"team": "red", "players": ["a", "c"], "rank": 2}, {"player": "b", "rank": 1}]},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rounds))
    result = replay(read_rounds(path), PARAMS)
    assert len(result.rounds) == 2 and not result.skipped
    a, b, c, d = (final_state(result, "L", p) for p in "abcd")
    assert a.rounds == 2 and b.rounds == 2 and d.rounds == 1
    assert d.mu < PARAMS.mu_noob < b.mu
    # the same two rounds, one at a time, through the team call
    batch = PlayerBatch.new(4, PARAMS)
    first = rate_team_round(batch, np.array([0, 0, 1, 1]), np.array([1, 2]), np.array([1, 0.5, 1, 1]), PARAMS, time=TIME)
    assert [final_state(result, "L", "d").mu] == [first.after.mu[3]]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 12), st.integers(1, 14), st.sampled_from(["mmr", "mmr-bounded", "mmx"]))
def test_rounds_with_teams_in_waves_equal_one_by_one(seed: int, pool: int, count: int, name: str) -> None:
    """``rate_rounds_with_teams`` (waves of player-disjoint rounds, teams and individuals solved
    together) equals rating the rounds one by one with ``rate_team_round`` / ``rate_round``,
    posterior by posterior, with the previous-participation links of ``rate_rounds``; draws of
    teams (every entry tied) rated on the presets that rate draws, skipped by ``mmr``."""
    from stream.engine import RoundSpec
    from stream.engine.teams import TeamRoundSpec, rate_rounds_with_teams

    params = preset(name)
    rng = np.random.default_rng(seed)
    prior = PlayerBatch.new(pool, params)
    specs: list[RoundSpec | TeamRoundSpec] = []
    for k in range(count):
        n = int(rng.integers(2, pool + 1))
        rows = rng.choice(pool, n, replace=False)
        when = TIME + 3_600.0 * k
        if rng.random() < 0.6:
            entry = rng.integers(0, max(2, n // 2), n)
            _, entry = np.unique(entry, return_inverse=True)
            entry_ranks = rng.integers(1, 4, int(entry.max()) + 1)
            shares = np.where(rng.random(n) < 0.4, rng.uniform(0.05, 1.0, n), 1.0)
            specs.append(TeamRoundSpec(rows, entry_ranks[entry], entry, entry_ranks, shares, when,
                                       weight=float(rng.choice([1.0, 0.5, 2.0]))))
        else:
            specs.append(RoundSpec(rows, rng.integers(1, 4, n), when))
    update = rate_rounds_with_teams(prior, specs, params)
    current = prior.copy()
    for k, spec in enumerate(specs):
        a, b = int(update.offsets[k]), int(update.offsets[k + 1])
        ranks = spec.entry_ranks if isinstance(spec, TeamRoundSpec) else spec.ranks
        if len(ranks) < 2 or (not params.draws_rate and (ranks == ranks[0]).all()):  # draws rated but by mmr
            assert not update.rated[k] and np.isnan(update.performance[a:b]).all()
            continue
        assert update.rated[k]
        before = current.take(spec.players)
        if isinstance(spec, TeamRoundSpec):
            one = rate_team_round(before, spec.entry, spec.entry_ranks, spec.weights, params, weight=spec.weight,
                                  time=spec.time)
        else:
            one = rate_round(before, spec.ranks, params, time=spec.time)
        current.put(spec.players, one.after)
        assert np.allclose(update.performance[a:b], one.performance, rtol=0, atol=1e-9)
        assert np.allclose(update.mu[a:b], one.after.mu, rtol=0, atol=1e-9)
        assert np.allclose(update.sigma[a:b], one.after.sigma, rtol=0, atol=1e-9)
    assert np.allclose(update.after.mu, current.mu, rtol=0, atol=1e-9)
    assert (update.after.rounds == current.rounds).all()
