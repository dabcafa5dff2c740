"""``stream void`` and ``stream amend``: validated locally (exit 2, nothing published), published to
``corrections``, and with ``--wait`` the worker's outcome (applied, rejected with its reason: exit 5)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from stream import engine
from stream.cli.main import app
from stream.pipeline.topics import ensure
from stream.settings import Settings
from stream.store import keys

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stream"))
import pipeline_harness as harness  # noqa: E402


def test_invalid_corrections_are_refused_before_publishing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP", "127.0.0.1:1")  # nothing may be sent: no broker there
    runner = CliRunner()
    bad = tmp_path / "bad.json"
    bad.write_text('{"round_id": "r1", "ladder": "alpha", "occurred_at": 1, "standings": [{"player": "a", "rank": 0}]}')
    result = runner.invoke(app, ["amend", str(bad)])
    assert result.exit_code == 2 and "bad_rank" in result.output and "round.standings" in result.output
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    assert runner.invoke(app, ["amend", str(broken)]).exit_code == 2
    result = runner.invoke(app, ["void", "bad ladder!", "r1"])
    assert result.exit_code == 2 and "bad_correction" in result.output


@pytest.mark.integration
def test_void_and_amend_with_wait(local_stack, stack_redis_url: str, fresh_prefix: str, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    rounds = harness.synthetic_rounds(seed=21, count=30, ladders=("alpha",), pool=10, max_size=5)
    env = harness.worker_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, HOLD_POLL_S="0.05")
    for name in ("KAFKA_BOOTSTRAP", "REDIS_URL", "TOPIC_PREFIX", "PARTITIONS", "ENGINE_PRESET"):
        monkeypatch.setenv(name, env[name])
    ensure(Settings.from_env(env))
    worker = harness.Worker(env, tmp_path / "worker.log").start()
    runner = CliRunner()
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", rounds)
        harness.wait_drained(stack_redis_url, harness.expected_rounds(rounds), [worker])
        voided = runner.invoke(app, ["void", "alpha", rounds[3]["round_id"], "--reason", "cheater", "--wait", "--json"])
        assert voided.exit_code == 0, voided.output + worker.log()
        assert json.loads(voided.stdout)["outcome"] == "applied"
        target = dict(rounds[7])
        ranks = [s["rank"] for s in target["standings"]]
        target["standings"] = [{"player": s["player"], "rank": r} for s, r in zip(reversed(target["standings"]), ranks)]
        path = tmp_path / "amended.json"
        path.write_text(json.dumps(target))
        amended = runner.invoke(app, ["amend", str(path), "--id", "fix-7", "--wait"])
        assert amended.exit_code == 0 and "outcome=applied" in amended.output, amended.output
        again = runner.invoke(app, ["amend", str(path), "--id", "fix-7", "--wait", "--json"])
        assert again.exit_code == 0 and json.loads(again.stdout)["correction_id"] == "fix-7"
        unknown = runner.invoke(app, ["void", "alpha", "no-such-round", "--wait", "--json"])
        assert unknown.exit_code == 5, unknown.output
        assert json.loads(unknown.stdout)["reason"] == "unknown_round"
    finally:
        worker.stop()
    client = redis.Redis.from_url(stack_redis_url)
    record = client.hgetall(keys.round_record("alpha", rounds[3]["round_id"]))
    assert record[b"status"] == b"voided" and json.loads(record[b"corrections"])[0]["reason"] == "cheater"
    # the trail is shown (issue 29 item 7): the CLI's round page names each correction, its id and reason
    shown = runner.invoke(app, ["round", "alpha", rounds[3]["round_id"]])
    assert shown.exit_code == 0 and ": voided," in shown.output
    step = next(line for line in shown.output.splitlines() if line.startswith("  void "))
    assert " by correction auto-" in step and step.endswith(": cheater"), shown.output
    view = json.loads(runner.invoke(app, ["round", "alpha", rounds[7]["round_id"], "--json"]).stdout)
    assert view["record"]["amended_by"] == "fix-7" and [s["id"] for s in view["record"]["corrections"]] == ["fix-7"]
    corrected = [r for r in rounds if r["round_id"] != rounds[3]["round_id"]]
    corrected[6] = target
    harness.assert_equals_reference(stack_redis_url, harness.reference(corrected, engine.preset("mmr")))
