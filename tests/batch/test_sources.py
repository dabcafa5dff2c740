"""Input files: JSONL (plain and gzip) and the authors' contest directories; bad input names the
file, line or round, and field."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from stream.batch import SourceError, read_rounds
from stream.contracts import Limits


def line(round_id: str, standings: list[object], **extra: object) -> str:
    return json.dumps({"round_id": round_id, "occurred_at": 100, "standings": standings, **extra})


def test_jsonl_plain_and_gzip_give_the_same_rounds(tmp_path: Path) -> None:
    text = "\n".join([line("r1", ["a", "b"]), "", line("r2", [["a", "b"], "c"], ladder="x", weight=0.5)]) + "\n"
    plain = tmp_path / "in.jsonl"
    plain.write_text(text)
    packed = tmp_path / "in.jsonl.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    rounds = read_rounds(plain)
    assert [(r.ladder, r.round_id) for r in rounds] == [("default", "r1"), ("x", "r2")]
    assert rounds[1].ranks().tolist() == [1, 1, 3] and rounds[1].weight == 0.5
    assert read_rounds(packed) == rounds


def test_outcome_free_rounds_are_kept_for_replay_to_record(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(line("solo", ["a"]) + "\n" + line("r", ["a", "b"]) + "\n")
    rounds = read_rounds(path)
    assert [r.is_outcome_free(draws_rate=True) for r in rounds] == [True, False]


@pytest.mark.parametrize(
    ("content", "where", "field", "reason"),
    [
        (line("ok", ["a", "b"]) + "\n" + line("r7", [{"player": "a", "rank": 1}, {"player": "b", "rank": 0}]),
         ":2 (round r7)", "standings[1].rank", "bad_rank"),
        (line("r1", ["a", "a"]), ":1 (round r1)", "standings[1]", "duplicate_player"),
        ("\n\n{not json", ":3", None, "not_json"),
        (line("r1", ["a", "b"], weight=-2), ":1 (round r1)", "weight", "bad_weight"),
        (json.dumps({"occurred_at": 1, "standings": ["a", "b"]}), ":1", "round_id", "schema"),
    ],
)
def test_bad_jsonl_names_line_round_and_field(tmp_path: Path, content: str, where: str, field: str | None,
                                              reason: str) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(content + "\n")
    with pytest.raises(SourceError) as info:
        read_rounds(path)
    assert info.value.where == f"{path}{where}"
    assert (info.value.field, info.value.reason) == (field, reason)
    assert str(path) in str(info.value) and reason in str(info.value)


def test_not_utf8_line(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(line("r1", ["a", "b"]).encode() + b"\n" + b'{"round_id": "\xff"}\n')
    with pytest.raises(SourceError, match=r":2: not_utf8"):
        read_rounds(path)


def test_limits_apply(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(line("r1", ["a", "b", "c"]) + "\n")
    with pytest.raises(SourceError) as info:
        read_rounds(path, limits=Limits(max_round_size=2))
    assert info.value.reason == "round_too_large"


def test_missing_file_and_corrupt_gzip(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no such file"):
        read_rounds(tmp_path / "absent.jsonl")
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(gzip.compress(line("r1", ["a", "b"]).encode())[:-10])
    with pytest.raises(SourceError, match="cannot read"):
        read_rounds(broken)


def write_contest(directory: Path, n: int, standings: list[list[object]], **extra: object) -> None:
    body = {"name": f"Contest {n}", "time_seconds": 1000 + n, "standings": standings, **extra}
    (directory / f"{n}.json").write_text(json.dumps(body))


def test_contest_directory_in_numeric_order(tmp_path: Path) -> None:
    for n in (10, 2, 0, 1):
        write_contest(tmp_path, n, [["a", 0, 0], ["b", 1, 2], ["c", 1, 2]], weight=0.5 if n == 2 else 1.0)
    (tmp_path / "notes.txt").write_text("ignored")
    rounds = read_rounds(tmp_path)
    assert [r.round_id for r in rounds] == ["0", "1", "2", "10"]
    assert all(r.ladder == "default" for r in rounds)
    assert rounds[0].occurred_at == 1000.0 and rounds[3].occurred_at == 1010.0
    assert rounds[0].ranks().tolist() == [1, 2, 2] and rounds[2].weight == 0.5


@pytest.mark.parametrize(
    ("standings", "extra", "field", "reason"),
    [
        ([["a", 0, 0], ["b", 2, 1]], {}, "standings[1]", "bad_rank"),
        ([["a", 0, 0], ["b", 1, 5]], {}, "standings[1]", "bad_rank"),
        ([["a", 0, 0], ["a", 1, 1]], {}, "standings[1].player", "duplicate_player"),
        ([["a", 0, 0], [7, 1, 1]], {}, "standings[1]", "bad_rank"),
        ([["a", 0, 0], ["b", 1, 1]], {"weight": 0}, "weight", "bad_weight"),
        ([["a", 0, 0], ["b", 1, 1]], {"time_seconds": "noon"}, "time_seconds", "schema"),
    ],
)
def test_bad_contest_file_names_file_and_field(tmp_path: Path, standings: list[list[object]],
                                               extra: dict[str, object], field: str, reason: str) -> None:
    write_contest(tmp_path, 0, [["x", 0, 0], ["y", 1, 1]])
    write_contest(tmp_path, 1, standings, **extra)
    with pytest.raises(SourceError) as info:
        read_rounds(tmp_path)
    assert info.value.where.startswith(str(tmp_path / "1.json"))
    assert "Contest 1" in info.value.where
    assert (info.value.field, info.value.reason) == (field, reason)


def test_empty_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no contest files"):
        read_rounds(tmp_path)


CSV_TEXT = """round_id,ladder,player,rank,occurred_at,team,player_weight
r1,l,a,1,100,,
r2,l,b,1,200,red,
r1,l,b,2,100,,
r2,l,c,1,200,red,0.5
r2,l,a,2,200,,
"""


def test_a_csv_gives_the_rounds_publish_reads_from_it(tmp_path: Path) -> None:
    """Issue 29 item 5: replay, evaluate and tune read the CSV publish and backfill take (one reader):
    rows grouped by (ladder, round_id) in order of first appearance, teams and shares kept."""
    from stream.cli.publish import read_rounds as publish_rounds

    path = tmp_path / "in.csv"
    path.write_text(CSV_TEXT)
    rounds = read_rounds(path)
    assert [(r.ladder, r.round_id) for r in rounds] == [("l", "r1"), ("l", "r2")]
    assert rounds == publish_rounds(path, Limits())
    assert rounds[1].ranks().tolist() == [1, 1, 2] and rounds[1].field_size == 3  # the red team: b and c


def test_a_bad_csv_row_names_its_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("round_id,ladder,player,rank\nr1,l,a,1\nr1,l,b,first\n")
    with pytest.raises(SourceError) as info:
        read_rounds(path)
    assert (info.value.where, info.value.field, info.value.reason) == (f"{path}:3", "rank", "bad_rank")
    rejected: list[SourceError] = []
    assert read_rounds(path, rejected=rejected) == [] and len(rejected) == 1
    path.write_text("round,player\nr1,a\n")
    with pytest.raises(SourceError, match="CSV header lacks column"):
        read_rounds(path, rejected=[])


def test_replay_evaluate_and_tune_take_a_csv(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from stream.cli.main import app

    csv_path, jsonl = tmp_path / "in.csv", tmp_path / "in.jsonl"
    rows = ["round_id,ladder,player,rank,occurred_at"]
    lines = []
    for k in range(30):
        a, b = f"p{k % 4}", f"p{(k + 1 + k // 4) % 4}"
        if a == b:
            b = f"p{(k + 2) % 4}"
        rows += [f"r{k},l,{a},1,{100 + k}", f"r{k},l,{b},2,{100 + k}"]
        lines.append(json.dumps({"round_id": f"r{k}", "ladder": "l", "occurred_at": 100 + k,
                                 "standings": [{"player": a, "rank": 1}, {"player": b, "rank": 2}]}))
    csv_path.write_text("\n".join(rows) + "\n")
    jsonl.write_text("\n".join(lines) + "\n")
    runner = CliRunner()
    outputs = []
    for source in (csv_path, jsonl):
        result = runner.invoke(app, ["replay", str(source), "--output", str(tmp_path / f"{source.suffix}.out")])
        assert result.exit_code == 0, result.output
        outputs.append((tmp_path / f"{source.suffix}.out").read_text())
    assert outputs[0] == outputs[1]
    result = runner.invoke(app, ["evaluate", str(csv_path), "--models", "elo-multiplayer"])
    assert result.exit_code == 0 and "elo-multiplayer" in result.output, result.output
    result = runner.invoke(app, ["tune", str(csv_path), "--model", "elo-multiplayer", "--budget", "2", "--jobs", "1",
                                 "--holdout", "0.2"])
    assert result.exit_code == 0 and "not JSON" not in result.output, result.output
