"""The TrueSkill model against its oracle, the ``trueskill`` package (scipy backend: exact normal
functions, as the model's): single rounds (teams, draws, partial play) and ``stream replay
--model trueskill`` end to end; within 1e-6 for two teams, 1e-3 for more."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import trueskill
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from stream.cli.main import app
from stream.engine.models import MODELS
from stream.engine.ratings import Ratings
from stream.engine.trueskill import TrueSkillParams, rate_teams

ENV = trueskill.TrueSkill(backend="scipy")  # the package's defaults: mu 25, sigma 25/3, beta 25/6, tau 25/300, draw 0.1
runner = CliRunner()


def test_defaults_are_the_packages() -> None:
    p = TrueSkillParams()
    assert (p.mu_noob, p.sig_noob, p.beta, p.tau, p.draw_probability) == (
        ENV.mu, ENV.sigma, ENV.beta, ENV.tau, ENV.draw_probability)
    assert MODELS["trueskill"].teams is not None


def oracle(mu: np.ndarray, sigma: np.ndarray, entry: np.ndarray, ranks: np.ndarray,
           weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The package's ratings of one round, aligned with the players."""
    groups = [{i: ENV.create_rating(mu[i], sigma[i]) for i in np.flatnonzero(entry == j)} for j in range(len(ranks))]
    w = {(j, i): weights[i] for j, g in enumerate(groups) for i in g}
    out = ENV.rate(groups, ranks=ranks.tolist(), weights=w)
    new = {i: r for g in out for i, r in g.items()}
    return np.array([new[i].mu for i in range(len(mu))]), np.array([new[i].sigma for i in range(len(mu))])


@st.composite
def team_rounds(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    k = draw(st.integers(2, 6))
    sizes = draw(st.lists(st.integers(1, 4), min_size=k, max_size=k))
    ranks = np.array(draw(st.lists(st.integers(1, k), min_size=k, max_size=k)))
    if (ranks == ranks[0]).all():
        ranks[0] += 1
    n = sum(sizes)
    mu = np.array(draw(st.lists(st.floats(15, 35), min_size=n, max_size=n)))
    sigma = np.array(draw(st.lists(st.floats(1.0, 25 / 3), min_size=n, max_size=n)))
    weights = np.array(draw(st.lists(st.sampled_from([1.0, 1.0, 0.75, 0.3, 0.05]), min_size=n, max_size=n)))
    return mu, sigma, np.repeat(np.arange(k), sizes), ranks, weights


@settings(max_examples=150, deadline=None)
@given(team_rounds())
def test_one_round_equals_the_package(case: tuple[np.ndarray, ...]) -> None:
    mu, sigma, entry, ranks, weights = case
    try:
        want_mu, want_sigma = oracle(mu, sigma, entry, ranks, weights)
    except FloatingPointError:  # the package gives up (winner far below loser); so do we
        with pytest.raises(FloatingPointError):
            rate_teams(Ratings(mu, sigma, np.zeros(len(mu), dtype=np.int64)), entry, ranks, weights, TrueSkillParams())
        return
    after = rate_teams(Ratings(mu, sigma, np.zeros(len(mu), dtype=np.int64)), entry, ranks, weights,
                       TrueSkillParams()).after
    tol = 1e-6 if len(ranks) == 2 else 1e-3
    assert np.abs(after.mu - want_mu).max() <= tol
    assert np.abs(after.sigma - want_sigma).max() <= tol
    assert (after.rounds == 1).all()


def history(path: Path, *, teams: int, size: int, rounds: int, seed: int, draws: float = 0.0,
            partial: bool = True, pool_size: int | None = None) -> list[dict[str, object]]:
    """A JSONL history of team rounds over a small pool (players recur), ties and partial play;
    a share ``draws`` of the rounds all tied (a draw: every entry at rank 1)."""
    rng = np.random.default_rng(seed)
    pool = [f"p{i}" for i in range(pool_size or teams * size * 2)]
    out = []
    for r in range(rounds):
        chosen = rng.choice(len(pool), teams * size, replace=False)
        ranks = rng.integers(1, teams + 1, teams)
        if (ranks == ranks[0]).all():
            ranks[0] = (ranks[0] % teams) + 1
        if rng.random() < draws:
            ranks[:] = 1
        standings: list[dict[str, object]] = []
        for t in range(teams):
            members: list[object] = []
            for i in chosen[t * size:(t + 1) * size]:
                w = float(rng.choice([1.0, 1.0, 1.0, 0.5, 0.2])) if partial else 1.0
                members.append(pool[i] if w == 1.0 else {"player": pool[i], "weight": w})
            standings.append({"team": f"t{t}", "players": members, "rank": int(ranks[t])} if size > 1
                             else {"player": members[0] if isinstance(members[0], str) else members[0]["player"],  # type: ignore[index]
                                   "rank": int(ranks[t])})
        out.append({"round_id": f"r{r}", "ladder": "L", "occurred_at": 1.7e9 + r, "standings": standings})
    path.write_text("".join(json.dumps(d) + "\n" for d in out))
    return out


def oracle_replay(rounds: list[dict[str, object]], env: trueskill.TrueSkill = ENV) -> dict[str, trueskill.Rating]:
    ratings: dict[str, trueskill.Rating] = {}
    for rnd in rounds:
        groups, weights, ranks = [], [], []
        for entry in rnd["standings"]:  # type: ignore[attr-defined]
            members = entry["players"] if "players" in entry else [entry["player"]]
            ids = [m if isinstance(m, str) else m["player"] for m in members]
            groups.append({p: ratings.get(p, env.create_rating()) for p in ids})
            weights.extend(((len(groups) - 1, p), 1.0 if isinstance(m, str) else m["weight"])
                           for p, m in zip(ids, members))
            ranks.append(entry["rank"])
        for group in env.rate(groups, ranks=ranks, weights=dict(weights)):
            ratings.update(group)
    return ratings


@pytest.mark.parametrize(("teams", "size", "tol"), [(2, 5, 1e-6), (2, 1, 1e-6), (5, 3, 1e-3), (8, 1, 1e-3)])
def test_stream_replay_model_trueskill_equals_the_package(tmp_path: Path, teams: int, size: int, tol: float) -> None:
    rounds = history(tmp_path / "in.jsonl", teams=teams, size=size, rounds=40, seed=teams * 10 + size)
    out = tmp_path / "out.csv"
    result = runner.invoke(app, ["replay", str(tmp_path / "in.jsonl"), "--model", "trueskill", "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["rated"] == 40
    want = oracle_replay(rounds)
    with out.open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(want)
    for row in rows:
        assert abs(float(row["mu"]) - want[row["player"]].mu) <= tol
        assert abs(float(row["sigma"]) - want[row["player"]].sigma) <= tol


def test_team_rounds_are_rejected_for_models_without_teams(tmp_path: Path) -> None:
    history(tmp_path / "in.jsonl", teams=2, size=2, rounds=3, seed=1)
    result = runner.invoke(app, ["replay", str(tmp_path / "in.jsonl"), "--model", "glicko", "-o", str(tmp_path / "o.csv")])
    assert result.exit_code == 2 and "teams_unsupported" in result.output
    result = runner.invoke(app, ["replay", str(tmp_path / "in.jsonl"), "--model", "glicko", "-o",
                                 str(tmp_path / "o.csv"), "--skip-rejected", "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["rejected"] == {"teams_unsupported": 3}


def replayed(tmp_path: Path, rounds: int) -> dict[str, tuple[float, float]]:
    """``stream replay --model trueskill`` of ``tmp_path/in.jsonl``: player -> (mu, sigma); every round rated."""
    out = tmp_path / "out.csv"
    result = runner.invoke(app, ["replay", str(tmp_path / "in.jsonl"), "--model", "trueskill", "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["rated"] == rounds and summary["skipped"] == 0
    with out.open() as fh:
        return {row["player"]: (float(row["mu"]), float(row["sigma"])) for row in csv.DictReader(fh)}


def max_deviation(ours: dict[str, tuple[float, float]], want: dict[str, trueskill.Rating]) -> tuple[float, float]:
    assert set(ours) == set(want)
    return (max(abs(ours[p][0] - r.mu) for p, r in want.items()),
            max(abs(ours[p][1] - r.sigma) for p, r in want.items()))


# The package's own normal functions (backend None, its default) and scipy's: the model computes
# them exactly, so both are oracles; the default's approximations stay far inside the bars.
BACKENDS = [None, "scipy"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_teams_with_draws_equal_the_package(tmp_path: Path, backend: str | None) -> None:
    """1,200 3v3 matches, 8 % of them drawn (both teams rank 1), replayed by ``stream replay
    --model trueskill``, end within 1e-6 mu of ``trueskill.TrueSkill(draw_probability=0.10).rate``."""
    rounds = history(tmp_path / "in.jsonl", teams=2, size=3, rounds=1200, seed=26, draws=0.08, partial=False,
                     pool_size=40)
    drawn = sum(all(e["rank"] == 1 for e in r["standings"]) for r in rounds)  # type: ignore[attr-defined,index]
    assert 60 <= drawn <= 140
    mu_dev, sigma_dev = max_deviation(replayed(tmp_path, 1200),
                                      oracle_replay(rounds, trueskill.TrueSkill(draw_probability=0.10, backend=backend)))
    print(f"two teams with draws ({backend}): max |mu diff| = {mu_dev:.3g}, max |sigma diff| = {sigma_dev:.3g}")
    assert mu_dev <= 1e-6 and sigma_dev <= 1e-6


@pytest.mark.parametrize("backend", BACKENDS)
def test_mixed_shapes_draws_and_partial_play_equal_the_package(tmp_path: Path, backend: str | None) -> None:
    """Rounds of 2 to 6 teams of 1 to 4 players, partial play, ties and draws of all entries,
    within 1e-2 mu of the package."""
    rng = np.random.default_rng(27)
    rounds: list[dict[str, object]] = []
    for k in range(12):
        teams, size = int(rng.integers(2, 7)), int(rng.integers(1, 5))
        part = history(tmp_path / "part.jsonl", teams=teams, size=size, rounds=50, seed=100 + k, draws=0.15,
                       pool_size=48)
        rounds += [{**r, "round_id": f"s{k}-{r['round_id']}", "occurred_at": 1.7e9 + len(rounds) + i}
                   for i, r in enumerate(part)]
    assert sum(all(e["rank"] == 1 for e in r["standings"]) for r in rounds) >= 40  # type: ignore[attr-defined,index]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(d) + "\n" for d in rounds))
    mu_dev, sigma_dev = max_deviation(replayed(tmp_path, len(rounds)),
                                      oracle_replay(rounds, trueskill.TrueSkill(draw_probability=0.10, backend=backend)))
    print(f"mixed shapes with draws ({backend}): max |mu diff| = {mu_dev:.3g}, max |sigma diff| = {sigma_dev:.3g}")
    assert mu_dev <= 1e-2 and sigma_dev <= 1e-2


@pytest.mark.parametrize("k", [2, 3, 5])
def test_an_all_tied_round_equals_the_package(k: int) -> None:
    """A draw of every entry (two teams, or several, partial play): the package's ratings."""
    rng = np.random.default_rng(k)
    sizes = rng.integers(1, 4, k)
    n = int(sizes.sum())
    mu, sigma = rng.uniform(18, 32, n), rng.uniform(1.5, 25 / 3, n)
    entry, ranks = np.repeat(np.arange(k), sizes), np.ones(k, dtype=np.int64)
    weights = rng.choice([1.0, 0.5, 0.2], n)
    want_mu, want_sigma = oracle(mu, sigma, entry, ranks, weights)
    after = rate_teams(Ratings(mu, sigma, np.zeros(n, dtype=np.int64)), entry, ranks, weights, TrueSkillParams()).after
    assert np.abs(after.mu - want_mu).max() <= (1e-6 if k == 2 else 1e-3)
    assert np.abs(after.sigma - want_sigma).max() <= (1e-6 if k == 2 else 1e-3)
    assert (np.abs(after.mu - mu) > 1e-6).any() and (after.sigma < np.sqrt(sigma**2 + TrueSkillParams().tau**2)).all()
