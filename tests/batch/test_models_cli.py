"""``stream replay --model`` and ``stream evaluate`` end to end on a small generated history."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import elo_mmr_py
import pytest
from typer.testing import CliRunner

from stream.batch import Metrics, read_rounds, replay
from stream.batch.models import model_names, replay_model
from stream.cli.main import app
from stream.engine import preset
from stream.engine.models import MODELS
from tests.batch.test_models_oracle import contest

runner = CliRunner()


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("models") / "rounds.jsonl"
    result = runner.invoke(app, ["generate-synthetic", str(path), "--players", "150", "--rounds", "20",
                                 "--round-size", "50", "--seed", "4", "--tie-quantum", "25"])
    assert result.exit_code == 0, result.output
    return path


def read_csv(path: Path) -> list[list[str]]:
    with path.open() as fh:
        return list(csv.reader(fh))


@pytest.mark.parametrize("name", [n for n, m in MODELS.items() if m.oracle is not None])
def test_replay_model_csv_is_the_authors_system(dataset: Path, tmp_path: Path, name: str) -> None:
    out = tmp_path / "ratings.csv"
    result = runner.invoke(app, ["replay", str(dataset), "--model", name, "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["model"] == name and summary["rated"] == 20
    rows = read_csv(out)
    assert rows[0] == ["ladder", "player", "mu", "sigma", "rounds"]
    theirs = elo_mmr_py.rate_latest([contest(r) for r in read_rounds(dataset)], system=MODELS[name].oracle)  # type: ignore[arg-type]
    assert len(rows) - 1 == len(theirs) == summary["players"]
    for _, player, mu, sigma, rounds in rows[1:]:
        assert abs(float(mu) - theirs[player].mu) <= 0.01
        assert abs(float(sigma) - theirs[player].sig) <= 1e-6
        assert int(rounds) == theirs[player].contests_played


def test_replay_elo_multiplayer_and_metrics(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "ratings.csv"
    result = runner.invoke(app, ["replay", str(dataset), "--model", "elo-multiplayer", "-o", str(out),
                                 "--metrics", "--json"])
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)["metrics"]
    expected = Metrics(20)
    final = {p: mu for _, p, mu, _, _ in replay_model(read_rounds(dataset), MODELS["elo-multiplayer"], metrics=expected).ratings()}
    assert metrics == expected.summary()
    assert {row[1]: float(row[2]) for row in read_csv(out)[1:]} == final


def test_default_model_is_todays_elo_mmr(dataset: Path, tmp_path: Path) -> None:
    plain, named = tmp_path / "plain.csv", tmp_path / "named.csv"
    assert runner.invoke(app, ["replay", str(dataset), "-o", str(plain)]).exit_code == 0
    assert runner.invoke(app, ["replay", str(dataset), "--model", "mmr", "-o", str(named)]).exit_code == 0
    expected = replay(read_rounds(dataset), preset("mmr")).states()
    rows = read_csv(plain)
    assert rows == read_csv(named)
    assert all(float(mu) == expected[(ladder, p)].mu for ladder, p, mu, _, _ in rows[1:])


def test_unknown_model_exits_2_and_writes_nothing(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.csv"
    result = runner.invoke(app, ["replay", str(dataset), "--model", "elo", "-o", str(out)])
    assert result.exit_code == 2
    assert "unknown model 'elo'" in result.output and "glicko" in result.output
    assert not out.exists()


def test_evaluate_json_is_one_row_per_model_with_replays_metrics(dataset: Path) -> None:
    result = runner.invoke(app, ["evaluate", str(dataset), "--models", "mmr-fast,codeforces,elo-multiplayer", "--json"])
    assert result.exit_code == 0, result.output
    table = json.loads(result.stdout)
    assert table["rounds"] == 20 and [row["model"] for row in table["models"]] == ["mmr-fast", "codeforces", "elo-multiplayer"]
    rounds = read_rounds(dataset)
    for row in table["models"]:
        expected = Metrics(len(rounds))
        if row["model"] == "mmr-fast":
            replay(rounds, preset("mmr-fast"), metrics=expected)
        else:
            replay_model(rounds, MODELS[row["model"]], metrics=expected)
        summary = expected.summary()
        for key in ("pair_all", "pair_exp", "rank_all", "rank_exp", "scored_rounds", "participations_exp"):
            assert row[key] == summary[key]
        assert row["scored_rounds"] == 18 and row["rated"] == 20
        assert row["rounds_per_s"] > 0 and row["seconds"] > 0
        assert 50.0 < row["pair_all"] <= 100.0 and 0.0 <= row["rank_all"] < 50.0


def test_evaluate_prints_the_table_for_every_model_by_default(dataset: Path) -> None:
    result = runner.invoke(app, ["evaluate", str(dataset)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = lines[1].split()
    assert header == ["model", "pair_all", "pair_exp", "rank_all", "rank_exp", "rounds/s", "seconds"]
    assert [line.split()[0] for line in lines[2:]] == model_names()
    assert all(len(line.split()) == 7 for line in lines[2:])


@pytest.mark.parametrize("models,message", [("glicko,nope", "unknown model(s) nope"), (",", "none given"),
                                            ("bar,bar", "listed twice")])
def test_evaluate_refuses_bad_model_lists(dataset: Path, models: str, message: str) -> None:
    result = runner.invoke(app, ["evaluate", str(dataset), "--models", models])
    assert result.exit_code == 2 and message in result.output


def test_evaluate_bad_input_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    result = runner.invoke(app, ["evaluate", str(bad), "--models", "glicko"])
    assert result.exit_code == 2 and "bad input" in result.output


def test_evaluate_json_has_null_where_nobody_was_scored(tmp_path: Path) -> None:
    """Three rounds: nobody has 5 earlier rounds, so the experienced figures are null (not NaN)."""
    path = tmp_path / "short.jsonl"
    assert runner.invoke(app, ["generate-synthetic", str(path), "--players", "20", "--rounds", "3",
                               "--round-size", "10"]).exit_code == 0
    result = runner.invoke(app, ["evaluate", str(path), "--models", "glicko,mmx", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["models"]
    assert all(row["pair_exp"] is None and row["rank_exp"] is None for row in rows)
    assert all(row["participations_exp"] == 0 and row["scored_rounds"] == 3 for row in rows)


def test_evaluate_names_a_model_whose_maths_breaks_down(tmp_path: Path) -> None:
    """TrueSkill's factor graph (as the trueskill package's) fails on a 300-player free-for-all of
    newcomers: evaluate exits 2 naming the model, not with a traceback."""
    source = tmp_path / "ffa.jsonl"
    assert CliRunner().invoke(app, ["generate-synthetic", str(source), "--players", "300", "--rounds", "2",
                                    "--round-size", "300"]).exit_code == 0
    result = CliRunner().invoke(app, ["evaluate", str(source), "--models", "glicko,trueskill"])
    assert result.exit_code == 2
    assert "model 'trueskill' cannot rate this history" in result.output and "Traceback" not in result.output
