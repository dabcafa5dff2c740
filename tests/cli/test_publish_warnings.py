"""Issue 29 item 10: what the service would silently ignore (an unknown field, an unknown CSV column:
often a typo such as ``occured_at``) is a warning when publishing; the file still publishes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stream.batch import read_rounds
from stream.batch.sources import SourceError
from stream.cli.main import app

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from readside_data import LADDER, seed  # noqa: E402

ROUND = {"round_id": "r1", "ladder": "l", "occurred_at": 5, "standings": [{"player": "a", "rank": 1},
                                                                         {"player": "b", "rank": 2}]}


def test_unknown_fields_and_columns_are_warned_about(tmp_path: Path) -> None:
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text("\n".join([json.dumps({**ROUND, "occured_at": 7}), json.dumps({**ROUND, "round_id": "r2"})]) + "\n")
    result = CliRunner().invoke(app, ["publish", str(jsonl), "--dry-run", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("validated 2 rounds")
    assert result.stderr.splitlines() == [
        "warning: 1 round(s) or header(s) carry what the service ignores (STRICT_SCHEMA=true would reject it):",
        f"  {jsonl}:1 (round r1): unknown field 'occured_at' ignored"]
    table = tmp_path / "in.csv"
    table.write_text("round_id,ladder,player,rank,occured_at\nr1,l,a,1,5\nr1,l,b,2,5\n")
    result = CliRunner().invoke(app, ["publish", str(table), "--dry-run", "--no-progress"])
    assert result.exit_code == 0 and f"{table}:1: unknown column(s) ignored: occured_at" in result.stderr
    clean = tmp_path / "clean.jsonl"
    clean.write_text(json.dumps(ROUND) + "\n")
    result = CliRunner().invoke(app, ["publish", str(clean), "--dry-run", "--no-progress"])
    assert result.exit_code == 0 and result.stderr == ""


def test_the_reader_lists_what_it_ignored_and_still_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({**ROUND, "standings": [{"player": "a", "rank": 1, "score": 9},
                                                      {"player": "b", "rank": 2}]}) + "\n")
    ignored: list[SourceError] = []
    rounds = read_rounds(path, ignored=ignored)
    assert rounds == read_rounds(path) and len(rounds) == 1
    assert [(e.field, e.reason) for e in ignored] == [("standings[0].score", "unknown_field")]


@pytest.mark.integration
def test_publish_wait_notes_a_new_ladder_that_looks_like_a_known_one(local_stack, stack_redis_url: str, fresh_prefix: str,
                                                                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A typo'd ladder would become a ladder of its own for good: ``publish --wait`` (Redis at hand) says so."""
    seed(stack_redis_url)  # ladder "blitz"
    for name, value in {"KAFKA_BOOTSTRAP": local_stack.bootstrap, "REDIS_URL": stack_redis_url,
                        "TOPIC_PREFIX": fresh_prefix}.items():
        monkeypatch.setenv(name, value)
    path = tmp_path / "typo.jsonl"
    path.write_text(json.dumps({**ROUND, "ladder": "blitzz"}) + "\n")
    result = CliRunner().invoke(app, ["publish", str(path), "--wait", "--wait-timeout", "1", "--no-progress"])
    assert result.exit_code == 1, result.output  # no worker here: still pending when the wait ends
    assert (f"note: new ladder(s) 'blitzz' (did you mean '{LADDER}'?): their rounds start ladders of their own; "
            f"known: {LADDER}") in result.stderr
