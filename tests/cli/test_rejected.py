"""Rejections made visible, end to end on the real broker and Redis with a real worker:
``stream publish --wait`` reports each round's outcome (rated, duplicate, rejected with its
reason) and exits non-zero on a rejection; ``stream rejected`` lists the dead letters (table,
JSON, --ladder, --follow); the worker's read API serves them and /health reports Kafka and lag."""

from __future__ import annotations

import json
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stream"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
import pipeline_harness as harness  # noqa: E402
from test_openapi import check  # noqa: E402

from stream.cli.main import app  # noqa: E402
from stream.cli.publish import EXIT_REJECTED  # noqa: E402
from stream.stack.ports import free_port, wait_for_port  # noqa: E402

pytestmark = pytest.mark.integration
LADDER = "cup"
T0 = 1_700_000_000.0
HTTP_TIMEOUT_S = 30


def _round(round_id: str, players: list[str], t: float) -> dict:
    return {"round_id": round_id, "ladder": LADDER, "occurred_at": t,
            "standings": [{"player": p, "rank": i + 1} for i, p in enumerate(players)]}


def _jsonl(path: Path, rounds: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rounds))
    return path


def _get(port: int, path: str) -> Any:
    return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=HTTP_TIMEOUT_S).read())


@pytest.fixture()
def worker(local_stack, stack_redis_url: str, fresh_prefix: str, tmp_path: Path):
    port = free_port()
    env = harness.worker_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, WEB_PORT=str(port),
                             STACK_STATE_FILE=str(tmp_path / "no-stack.json"))
    running = harness.Worker(env, tmp_path / "worker.log", web=True).start()
    try:
        wait_for_port(port, timeout_s=60)
        yield env, port
    finally:
        running.stop()
    assert running.process is not None and running.process.returncode == 0, running.log()
    assert " ERROR " not in running.log(), running.log()


def test_publish_wait_reports_outcomes_and_rejected_lists_them(worker, local_stack, fresh_prefix: str,
                                                             tmp_path: Path) -> None:
    env, port = worker
    cli = CliRunner()
    first = _jsonl(tmp_path / "first.jsonl", [_round("r1", ["ann", "bob", "cid"], T0),
                                              _round("r2", ["bob", "cid", "dan"], T0 + 60)])
    result = cli.invoke(app, ["publish", str(first), "--wait", "--no-progress"], env=env)
    assert result.exit_code == 0, result.output
    assert "published 2 rounds" in result.output and "outcomes: 2 rated, 0 no_outcome, 0 duplicate" in result.output

    # r1 again (a no-op), r2 reused for other content (a conflict), r3 new, and a one-player round
    second = _jsonl(tmp_path / "second.jsonl", [_round("r1", ["ann", "bob", "cid"], T0),
                                                _round("r2", ["dan", "cid", "bob"], T0 + 60),
                                                _round("r3", ["ann", "dan"], T0 + 120),
                                                _round("solo", ["ann"], T0 + 180)])
    result = cli.invoke(app, ["publish", str(second), "--wait", "--json", "--no-progress"], env=env)
    assert result.exit_code == EXIT_REJECTED, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["outcomes"] == {"rated": 1, "no_outcome": 1, "duplicate": 1, "rejected": 1, "pending": 0}
    by_id = {o["round_id"]: o for o in summary["rounds_outcome"]}
    assert [by_id[r]["outcome"] for r in ("r1", "r2", "r3", "solo")] == ["duplicate", "rejected", "rated", "no_outcome"]
    assert (by_id["r2"]["reason"], by_id["r2"]["field"]) == ("conflict", "round_id")

    text = cli.invoke(app, ["publish", str(second), "--wait", "--no-progress"], env=env)
    assert text.exit_code == EXIT_REJECTED
    assert "rejected cup/r2: conflict (round_id)" in text.output and "duplicate cup/r3" in text.output

    # something no publish would send: straight to the topic, keyed by the ladder
    harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", [b"{not json"], key=LADDER)
    harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", [b"[1]"], key="other")

    deadline = time.monotonic() + 60
    while True:
        listed = cli.invoke(app, ["rejected", "--ladder", LADDER, "--json"], env=env)
        assert listed.exit_code == 0, listed.output
        rejections = [json.loads(line) for line in listed.stdout.splitlines()]
        if len(rejections) >= 3 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert [x["reason"] for x in rejections] == ["not_json", "conflict", "conflict"]  # newest first
    assert rejections[1]["round_id"] == "r2" and rejections[0]["ladder"] == LADDER
    table = cli.invoke(app, ["rejected"], env=env)
    assert table.exit_code == 0 and table.output.splitlines()[0].split()[:3] == ["when", "(UTC)", "ladder"]
    assert {"not_json", "conflict", "schema"} <= {line.split()[4] for line in table.output.splitlines()[1:]}

    # --follow: the last one, then a new one as it arrives
    def later() -> None:
        time.sleep(2)
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", [b"\xff\xfe"], key=LADDER)

    feeder = threading.Thread(target=later)
    feeder.start()
    followed = cli.invoke(app, ["rejected", "--ladder", LADDER, "--follow", "--limit", "1", "--json",
                                "--timeout", "20"], env=env)
    feeder.join()
    reasons = [json.loads(line)["reason"] for line in followed.stdout.splitlines()]
    assert followed.exit_code == 0 and reasons == ["not_json", "not_utf8"]

    # the worker's read API: the ladder's rejections, and /health with Kafka and the lag
    served = _get(port, f"/api/ladders/{LADDER}/rejected?limit=10")
    check("/api/ladders/{ladder}/rejected", "get", 200, served)
    assert [x["reason"] for x in served["rejections"]][:2] == ["not_utf8", "not_json"]
    deadline = time.monotonic() + 30
    while (health := _get(port, "/health"))["kafka"]["ok"] is None and time.monotonic() < deadline:
        time.sleep(0.5)
    check("/health", "get", 200, health)
    assert health["status"] == "ok" and health["redis"] is True and health["kafka"]["ok"] is True
    assert set(health["kafka"]["lag"]) == {"rounds", "player-updates"}


def test_rejected_without_kafka_is_a_clear_error(tmp_path: Path) -> None:
    env = {"KAFKA_BOOTSTRAP": f"127.0.0.1:{free_port()}", "STACK_STATE_FILE": str(tmp_path / "none.json")}
    result = CliRunner().invoke(app, ["rejected"], env=env)
    assert result.exit_code == 4 and f"error: cannot reach Kafka at {env['KAFKA_BOOTSTRAP']} (KAFKA_BOOTSTRAP)" in result.output
