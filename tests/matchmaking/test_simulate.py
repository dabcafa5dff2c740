"""The closed loop (stream simulate) on a small population, seeds fixed: the matchmaker is far
fairer than random pairing and close to the ideal pairing; the CLI prints the four figures."""

from __future__ import annotations

import json

import numpy as np
from typer.testing import CliRunner

from stream.cli.main import app
from stream.engine.ladders import parse_ladders
from stream.matchmaking.sim_report import fair_share, summarise
from stream.matchmaking.simulate import SimConfig, simulate

LADDER = parse_ladders("").of("sim")


def test_matchmaker_is_fairer_than_random_and_near_ideal() -> None:
    sim = SimConfig(players=400, games=16, break_s=30.0, seed=3)  # a small population: a sparse queue
    records = simulate(sim, LADDER, strategies=("matchmaker", "random", "ideal", "openskill"))
    fair = {name: fair_share(r, 8, 16)[0] for name, r in records.items()}
    assert fair["matchmaker"] > fair["random"] + 0.1
    assert fair["openskill"] > fair["random"] + 0.1
    assert fair["matchmaker"] >= 0.8 * fair["ideal"]  # 2,000 players: >= 1.0 (README)
    for name, record in records.items():
        assert len(record.true_p) == len(record.won) == len(record.games)
        assert np.mean(record.games) > 0
        accuracy = [a for _, a in record.accuracy]
        assert accuracy[-1] > accuracy[0] and accuracy[-1] > 0.75, name
    random_error = summarise(records["random"]).calibration_error
    assert summarise(records["matchmaker"]).calibration_error < 0.1 and random_error < 0.1


def test_same_seed_same_run() -> None:
    sim = SimConfig(players=60, games=4, break_s=20.0, seed=5)
    first = simulate(sim, LADDER, strategies=("matchmaker", "window"))
    again = simulate(sim, LADDER, strategies=("matchmaker", "window"))
    assert first["matchmaker"].true_p == again["matchmaker"].true_p
    assert first["window"].waits == again["window"].waits


def test_cli(tmp_path) -> None:  # type: ignore[no-untyped-def]
    runner = CliRunner()
    result = runner.invoke(app, ["simulate", "--players", "60", "--games", "4", "--break-s", "20",
                                 "--strategies", "matchmaker,random,ideal", "--json", "--plot", str(tmp_path)])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert set(figures) == {"matchmaker", "random", "ideal"}
    assert {"fair", "fair_by_games", "accuracy", "wait_p50", "wait_p99", "calibration"} <= set(figures["random"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["accuracy.svg", "calibration.svg", "fairness.svg"]
    assert "<polyline" in (tmp_path / "fairness.svg").read_text()
    bad = runner.invoke(app, ["simulate", "--queues", '{"q": {"ladder": "x", "teams": 2, "team_size": 5}}'])
    assert bad.exit_code == 2 and "plays duels" in bad.output
    bad = runner.invoke(app, ["simulate", "--strategies", "elo"])
    assert bad.exit_code == 2 and "unknown elo" in bad.output


def test_cli_rates_duels_with_the_duel_preset_unless_told_otherwise() -> None:
    """Without --preset or --ladders the loop is rated by mmr-duel; --preset and --ladders override it."""
    runner = CliRunner()
    base = ["simulate", "--players", "60", "--games", "4", "--break-s", "20", "--strategies", "matchmaker", "--json"]

    def accuracy(*extra: str) -> list:
        result = runner.invoke(app, [*base, *extra])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)["matchmaker"]["accuracy"]

    default = accuracy()
    assert default == accuracy("--preset", "mmr-duel")
    assert default == accuracy("--ladders", '{"*": {"model": "mmr-duel"}}')
    assert default != accuracy("--preset", "mmr-bounded")
    assert accuracy("--preset", "mmr-bounded") == accuracy("--ladders", '{"*": {"model": "mmr-bounded"}}')
    bad = runner.invoke(app, [*base, "--preset", "nope"])
    assert bad.exit_code == 2 and "unknown preset 'nope'" in bad.output


def test_drift_moves_the_true_skills() -> None:
    still = simulate(SimConfig(players=40, games=3, break_s=20.0, seed=2), LADDER, strategies=("matchmaker",))
    moving = simulate(SimConfig(players=40, games=3, break_s=20.0, seed=2, drift_per_hour=3000.0), LADDER,
                      strategies=("matchmaker",))
    assert len(moving["matchmaker"].true_p) > 0
    assert still["matchmaker"].true_p != moving["matchmaker"].true_p
