"""``stream publish`` against the real local broker: validate everything first, then produce keyed by ladder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stream.cli.main import app
from stream.cli.store_command import EXIT_BAD_INPUT as EXIT_INVALID
from tests.cli.kafka_helpers import read_topic, topic_exists

pytestmark = pytest.mark.integration

PARTITIONS = 4
T0 = 1_700_000_000.0


def _murmur_partition(key: bytes, partitions: int) -> int:
    from kafka.partitioner.default import murmur2

    return (murmur2(key) & 0x7FFFFFFF) % partitions


@pytest.fixture()
def env(local_stack, fresh_prefix: str, tmp_path: Path) -> dict[str, str]:
    """Environment of a publish run: this test's topic prefix, no stack state file of the user's."""
    return {"KAFKA_BOOTSTRAP": local_stack.bootstrap, "TOPIC_PREFIX": fresh_prefix, "PARTITIONS": str(PARTITIONS),
            "STACK_STATE_FILE": str(tmp_path / "no-stack.json")}


def _round(round_id: str, ladder: str, players: list[str], t: float = T0) -> dict:
    return {"round_id": round_id, "ladder": ladder, "occurred_at": t,
            "standings": [{"player": p, "rank": i + 1} for i, p in enumerate(players)]}


def _write_jsonl(path: Path, rounds: list[dict | str]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rounds))
    return path


def test_jsonl_is_published_keyed_by_ladder(env, local_stack, fresh_prefix: str, tmp_path: Path) -> None:
    rounds = [_round(f"r{i}", "blitz" if i % 2 else "classic", ["ann", "bob", "cid"], T0 + i) for i in range(6)]
    rounds.append(_round("solo", "blitz", ["ann"]))  # outcome-free: valid, published, nobody rated
    source = _write_jsonl(tmp_path / "rounds.jsonl", rounds[:3] + [""] + rounds[3:])  # a blank line is skipped
    result = CliRunner().invoke(app, ["publish", str(source), "--json", "--no-progress"], env=env)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["rounds"] == 7 and summary["no_outcome"] == 1 and summary["failed"] == 0
    assert summary["ladders"] == {"classic": 3, "blitz": 4}
    assert summary["topic"] == f"{fresh_prefix}rounds"

    records = read_topic(local_stack.bootstrap, f"{fresh_prefix}rounds", 7)
    assert len(records) == 7
    by_id = {json.loads(r.value)["round_id"]: r for r in records}
    assert set(by_id) == {r["round_id"] for r in rounds}
    for sent in rounds:
        record = by_id[sent["round_id"]]
        assert record.key == sent["ladder"].encode()
        assert record.partition == _murmur_partition(record.key, PARTITIONS)
        value = json.loads(record.value)
        assert [s["player"] for s in value["standings"]] == [s["player"] for s in sent["standings"]]
        assert value["occurred_at"] == sent["occurred_at"]
    # Per ladder, the topic keeps the file's order (one partition per ladder).
    blitz = [json.loads(r.value)["round_id"] for r in sorted(records, key=lambda r: r.offset) if r.key == b"blitz"]
    assert blitz == ["r1", "r3", "r5", "solo"]


def test_bad_jsonl_row_reports_line_and_field_and_publishes_nothing(env, local_stack, fresh_prefix: str,
                                                                     tmp_path: Path) -> None:
    good = _round("r1", "default", ["ann", "bob"])
    bad = _round("r2", "default", ["ann", "bob", "ann"])  # duplicate player, third standing
    source = _write_jsonl(tmp_path / "bad.jsonl", [good, good | {"round_id": "r0"}, bad, good | {"round_id": "r3"}])
    result = CliRunner().invoke(app, ["publish", str(source), "--no-progress"], env=env)
    assert result.exit_code == EXIT_INVALID
    assert f"{source}:3" in result.output
    assert "standings[2]" in result.output
    assert "nothing published" in result.output
    assert not topic_exists(local_stack.bootstrap, f"{fresh_prefix}rounds")


def test_every_bad_line_is_listed_up_to_a_limit(env, local_stack, fresh_prefix: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from stream.cli import publish as publish_module

    good = _round("r1", "default", ["ann", "bob"])
    lines: list[dict | str] = [good, _round("r2", "default", ["ann", "ann"]), "{not json",
                               {k: v for k, v in good.items() if k != "occurred_at"} | {"round_id": "r4"}, good]
    source = _write_jsonl(tmp_path / "bad.jsonl", lines)
    result = CliRunner().invoke(app, ["publish", str(source), "--no-progress"], env=env)
    assert result.exit_code == EXIT_INVALID
    listed = [line.strip() for line in result.output.splitlines()[1:]]
    assert result.output.splitlines()[0] == f"error: 3 bad rows or rounds in {source}; nothing published:"
    assert listed == [f"{source}:2 (round r2): standings[1].player: player 'ann' appears twice [duplicate_player]",
                      f"{source}:3: not JSON: Expecting property name enclosed in double quotes at column 2 [not_json]",
                      f"{source}:4 (round r4): occurred_at: required field 'occurred_at' is missing [schema]"]
    assert not topic_exists(local_stack.bootstrap, f"{fresh_prefix}rounds")

    monkeypatch.setattr(publish_module, "MAX_REPORTED_ERRORS", 2)
    limited = CliRunner().invoke(app, ["publish", str(source), "--no-progress", "--json"], env=env)
    report = json.loads(limited.stdout.strip().splitlines()[0])
    assert report["count"] == 3 and [e["error"] for e in report["errors"]] == ["duplicate_player", "not_json"]
    assert limited.output.strip().endswith("… and 1 more")


def test_not_json_line_is_reported(env, tmp_path: Path) -> None:
    source = _write_jsonl(tmp_path / "broken.jsonl", [_round("r1", "default", ["a", "b"]), "{not json"])
    result = CliRunner().invoke(app, ["publish", str(source), "--json", "--no-progress"], env=env)
    assert result.exit_code == EXIT_INVALID
    error = json.loads(result.stdout.strip().splitlines()[0])
    assert error["location"] == f"{source}:2" and error["error"] == "not_json"


def test_round_id_reused_with_other_content_is_a_conflict(env, tmp_path: Path) -> None:
    source = _write_jsonl(tmp_path / "dup.jsonl", [_round("r1", "default", ["a", "b"]), _round("r1", "default", ["b", "a"])])
    result = CliRunner().invoke(app, ["publish", str(source), "--json", "--no-progress"], env=env)
    assert result.exit_code == EXIT_INVALID
    assert json.loads(result.stdout.strip().splitlines()[0])["error"] == "conflict"


def test_csv_rows_are_grouped_into_rounds(env, local_stack, fresh_prefix: str, tmp_path: Path) -> None:
    source = tmp_path / "rounds.csv"
    source.write_text(
        "round_id,ladder,player,rank,occurred_at,weight\n"
        "r1,blitz,ann,1,1700000000,\n"
        "r2,blitz,cid,2,2024-05-01T12:00:00Z,0.5\n"
        "r1,blitz,bob,2,,\n"       # rows of r1 need not be adjacent
        "r2,blitz,ann,1,,\n"
        "r1,blitz,cid,2,,\n"       # tie with bob
    )
    result = CliRunner().invoke(app, ["publish", str(source), "--json", "--no-progress"], env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.strip().splitlines()[-1])["rounds"] == 2
    records = read_topic(local_stack.bootstrap, f"{fresh_prefix}rounds", 2)
    values = {v["round_id"]: v for v in (json.loads(r.value) for r in records)}
    assert values["r1"]["standings"] == [{"player": "ann", "rank": 1}, {"player": "bob", "rank": 2},
                                         {"player": "cid", "rank": 2}]
    assert values["r1"]["occurred_at"] == 1_700_000_000
    assert values["r2"]["occurred_at"] == 1_714_564_800  # 2024-05-01T12:00:00Z
    assert values["r2"]["weight"] == 0.5


def test_csv_error_points_at_the_offending_row(env, tmp_path: Path) -> None:
    source = tmp_path / "bad.csv"
    source.write_text(
        "round_id,ladder,player,rank\n"
        "r1,default,ann,1\n"
        "r1,default,bob,2\n"
        "r2,default,ann,1\n"
        "r1,default,ann,3\n"      # line 5: ann twice in r1
    )
    result = CliRunner().invoke(app, ["publish", str(source), "--json", "--no-progress"], env=env)
    assert result.exit_code == EXIT_INVALID
    error = json.loads(result.stdout.strip().splitlines()[0])
    assert error["location"] == f"{source}:5" and error["error"] == "duplicate_player"

    source.write_text("round_id,ladder,player,rank\nr1,default,ann,first\n")
    result = CliRunner().invoke(app, ["publish", str(source), "--json", "--no-progress"], env=env)
    assert result.exit_code == EXIT_INVALID
    error = json.loads(result.stdout.strip().splitlines()[0])
    assert (error["location"], error["field"]) == (f"{source}:2", "rank")

    source.write_text("round_id,player,rank\nr1,ann,1\n")
    result = CliRunner().invoke(app, ["publish", str(source), "--json", "--no-progress"], env=env)
    assert result.exit_code == EXIT_INVALID
    assert json.loads(result.stdout.strip().splitlines()[0])["field"] == "ladder"


def test_dry_run_validates_without_publishing(env, local_stack, fresh_prefix: str, tmp_path: Path) -> None:
    source = _write_jsonl(tmp_path / "ok.jsonl", [_round("r1", "default", ["a", "b"])])
    result = CliRunner().invoke(app, ["publish", str(source), "--dry-run", "--json"], env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.strip().splitlines()[-1])["rounds"] == 1
    assert not topic_exists(local_stack.bootstrap, f"{fresh_prefix}rounds")


def test_directory_of_contest_files(env, local_stack, fresh_prefix: str, tmp_path: Path) -> None:
    contests = tmp_path / "contests"
    contests.mkdir()
    for n, names in enumerate([["ann", "bob", "cid"], ["cid", "ann"]]):
        standings = [[name, i, i] for i, name in enumerate(names)]
        (contests / f"{n}.json").write_text(json.dumps({"name": f"c{n}", "time_seconds": T0 + n, "standings": standings}))
    result = CliRunner().invoke(app, ["publish", str(contests), "--json", "--no-progress"], env=env)
    assert result.exit_code == 0, result.output
    records = read_topic(local_stack.bootstrap, f"{fresh_prefix}rounds", 2)
    values = sorted((json.loads(r.value) for r in records), key=lambda v: v["round_id"])
    assert [(v["round_id"], v["ladder"], [s["player"] for s in v["standings"]]) for v in values] == [
        ("0", "default", ["ann", "bob", "cid"]), ("1", "default", ["cid", "ann"])]

    (contests / "2.json").write_text(json.dumps({"name": "c2", "time_seconds": T0, "standings": [["ann", 0, 5]]}))
    result = CliRunner().invoke(app, ["publish", str(contests), "--json", "--no-progress"], env=env)
    assert result.exit_code == EXIT_INVALID
    error = json.loads(result.stdout.strip().splitlines()[0])
    assert str(contests / "2.json") in error["location"] and error["field"] == "standings[0]"


def test_csv_team_column_builds_team_entries(tmp_path: Path) -> None:
    from stream.cli.publish import InvalidFile, read_rounds
    from stream.contracts import Limits

    source = tmp_path / "teams.csv"
    source.write_text(
        "round_id,ladder,player,rank,team,player_weight,occurred_at\n"
        "r1,default,ann,1,red,,1700000000\n"
        "r1,default,cy,2,blue,,1700000000\n"
        "r1,default,bob,1,red,0.5,1700000000\n"
        "r1,default,dee,2,blue,,1700000000\n"
        "r1,default,eve,3,,0.25,1700000000\n"
    )
    [round_] = read_rounds(source, Limits(), now=0.0)
    assert not round_.is_outcome_free(draws_rate=True) and round_.has_teams()
    assert round_.to_dict()["standings"] == [
        {"team": "red", "players": ["ann", {"player": "bob", "weight": 0.5}], "rank": 1},
        {"team": "blue", "players": ["cy", "dee"], "rank": 2},
        {"player": "eve", "weight": 0.25, "rank": 3},
    ]
    source.write_text("round_id,ladder,player,rank,team\nr1,default,ann,1,red\nr1,default,bob,2,red\n")
    with pytest.raises(InvalidFile) as info:
        read_rounds(source, Limits(), now=0.0)
    [error] = info.value.errors
    assert f"{source}:3" in str(error) and "rank" in str(error)
    source.write_text("round_id,ladder,player,rank,team,player_weight\nr1,default,ann,1,red,\nr1,default,bob,2,blue,1.5\n")
    with pytest.raises(InvalidFile) as info:
        read_rounds(source, Limits(), now=0.0)
    [error] = info.value.errors
    assert (error.reason, error.where) == ("bad_player_weight", f"{source}:3")


def test_jsonl_team_rounds_are_read_as_published(tmp_path: Path) -> None:
    """``stream publish`` reads team entries and shares played from JSONL unchanged (the stream
    rates them: tests/stream/test_team_pipeline.py)."""
    from stream.cli.publish import read_rounds
    from stream.contracts import Limits

    standings = [{"team": "red", "players": ["ann", {"player": "bob", "weight": 0.5}], "rank": 1},
                 {"team": "blue", "players": ["cy", "dee"], "rank": 2}, {"player": "eve", "weight": 0.25, "rank": 3}]
    source = tmp_path / "teams.jsonl"
    source.write_text(json.dumps({"round_id": "r1", "occurred_at": 1.7e9, "standings": standings}) + "\n")
    [round_] = read_rounds(source, Limits(), now=0.0)
    assert not round_.is_outcome_free(draws_rate=True) and round_.has_teams() and round_.is_partial()
    assert round_.to_dict()["standings"] == standings
