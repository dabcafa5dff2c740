"""``stream replay`` / ``stream generate-synthetic`` end to end: output, exit codes, and no
partial output on bad input."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stream.batch import read_rounds, replay
from stream.contracts import Limits, RoundResult, parse_round
from stream.cli.main import app
from stream.engine import preset

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


@pytest.fixture()
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "rounds.jsonl.gz"
    result = runner.invoke(app, ["generate-synthetic", str(path), "--players", "120", "--rounds", "10",
                                 "--round-size", "40", "--seed", "3", "--tie-quantum", "25"])
    assert result.exit_code == 0, result.output
    return path


def test_replay_writes_every_players_final_rating(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "ratings.csv"
    result = runner.invoke(app, ["replay", str(dataset), "--preset", "mmx", "--output", str(out), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["rounds"] == 10 and summary["rated"] == 10 and summary["participations"] == 400
    with out.open() as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["ladder", "player", "mu", "sigma", "rounds"]
    expected = replay(read_rounds(dataset), preset("mmx")).states()
    assert len(rows) - 1 == len(expected) == summary["players"]
    for ladder, player, mu, sigma, rounds in rows[1:]:
        state = expected[(ladder, player)]
        assert float(mu) == state.mu and float(sigma) == state.sigma and int(rounds) == state.rounds


def test_replay_metrics(dataset: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["replay", str(dataset), "-o", str(tmp_path / "r.csv"), "--metrics", "--json"])
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)["metrics"]
    assert metrics["scored_rounds"] == 9
    assert 50.0 < metrics["pair_all"] <= 100.0 and 0.0 <= metrics["rank_all"] < 50.0


def test_bad_input_exits_2_names_round_and_field_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"round_id": "ok", "occurred_at": 1, "standings": ["a", "b"]}) + "\n"
        + json.dumps({"round_id": "r2", "occurred_at": 2, "standings": [{"player": "a", "rank": 1},
                                                                        {"player": "b", "rank": "x"}]}) + "\n"
    )
    out = tmp_path / "out.csv"
    result = runner.invoke(app, ["replay", str(bad), "-o", str(out)])
    assert result.exit_code == 2
    assert "round r2" in result.stderr and "standings[1].rank" in result.stderr and "bad.jsonl:2" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


def test_existing_output_is_untouched_on_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{oops\n")
    out = tmp_path / "out.csv"
    out.write_text("previous\n")
    result = runner.invoke(app, ["replay", str(bad), "-o", str(out)])
    assert result.exit_code == 2 and "not_json" in result.stderr
    assert out.read_text() == "previous\n"


def test_unknown_preset_and_missing_input(dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "x.csv"
    assert runner.invoke(app, ["replay", str(dataset), "-o", str(out), "--preset", "nope"]).exit_code == 2
    missing = runner.invoke(app, ["replay", str(tmp_path / "absent.jsonl"), "-o", str(out)])
    assert missing.exit_code == 2 and "no such file" in missing.stderr
    assert not out.exists()


def test_console_entry_point_exit_code(tmp_path: Path) -> None:
    """The real process: ``python -m stream replay`` (same code as the ``stream`` script)."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"round_id": "d", "occurred_at": 1, "standings": ["a", "a"]}) + "\n")
    out = tmp_path / "out.csv"
    proc = subprocess.run([sys.executable, "-m", "stream", "replay", str(bad), "-o", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "duplicate_player" in proc.stderr and "round d" in proc.stderr
    assert not out.exists()


def line(round_id: str, players: list[str], at: float, **extra: object) -> str:
    return json.dumps({"round_id": round_id, "ladder": "L", "occurred_at": at, "standings": players, **extra})


def test_replay_registers_rounds_as_the_stream_does(tmp_path: Path) -> None:
    """A re-published round is a no-op and a re-used id with other content is a conflict (exit 2, or
    left out with --skip-rejected), as on the stream; so are lines the stream dead-letters."""
    first = line("r1", ["a", "b", "c"], 10)
    same = json.dumps({"standings": [{"player": "a", "rank": 1}, {"player": "b", "rank": 2},
                                     {"player": "c", "rank": 3}], "occurred_at": 10.0, "ladder": "L", "round_id": "r1"})
    other = line("r1", ["c", "b", "a"], 10)
    lines = [first, line("r2", ["a", "b"], 20), same, other, line("r3", ["b", "c"], 30),
             '{"round_id": "big", "occurred_at": 1' + "0" * 5000 + ', "standings": ["a", "b"]}',
             line("r4", ["a", "c"], 40, weight=1e6), line("r5\ud800", ["a", "c"], 50), line("r6", ["c", "a"], 60)]
    data = tmp_path / "mixed.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    out = tmp_path / "out.csv"

    failed = runner.invoke(app, ["replay", str(data), "-o", str(out)])
    assert failed.exit_code == 2 and "bad_number" in failed.stderr and not out.exists()

    result = runner.invoke(app, ["replay", str(data), "-o", str(out), "--skip-rejected", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["rejected"] == {"bad_number": 1, "bad_weight": 1, "conflict": 1, "not_utf8": 1}
    assert summary["duplicates"] == 1 and summary["rounds"] == summary["rated"] == 4
    assert "conflict: round_id 'r1' of ladder 'L' was already used (seq 1)" in result.stderr
    kept = [json.loads(x) for x in (first, lines[1], lines[4], lines[8])]
    expected = replay([read_rounds_line(x) for x in kept], preset("mmr")).states()
    with out.open() as fh:
        rows = list(csv.reader(fh))[1:]
    assert {(r[0], r[1]): (float(r[2]), float(r[3]), int(r[4])) for r in rows} == {
        k: (s.mu, s.sigma, s.rounds) for k, s in expected.items()}

    conflicting = tmp_path / "conflict.jsonl"
    conflicting.write_text("\n".join([first, other]) + "\n")
    failed = runner.invoke(app, ["replay", str(conflicting), "-o", str(out)])
    assert failed.exit_code == 2 and "conflict" in failed.stderr


def read_rounds_line(data: dict) -> RoundResult:
    return parse_round(data, limits=Limits())
