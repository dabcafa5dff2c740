"""A season started with ``stream season start`` while the workers run takes effect without a
restart (the schedule of record in Redis, read every SEASON_REFRESH_S), and Redis still equals
``stream replay --ladders`` of the same rounds with the schedule the command wrote to the file."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path

import pytest

import pipeline_harness as harness
from test_seasons_pipeline import LADDERS, _iso, assert_equals_replay, replay, rounds

pytestmark = pytest.mark.integration

LIVE_START_DAY = 35
"""Ladder ``s``'s second season is started live; its first (day 15) is configured."""


def test_a_season_started_while_workers_run(local_stack, stack_redis_url: str, fresh_prefix: str,
                                            tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from stream.cli.main import app

    configured = copy.deepcopy(LADDERS)
    configured["s"]["seasons"]["schedule"] = configured["s"]["seasons"]["schedule"][:1]  # S1 only
    ladders_file = tmp_path / "ladders.json"
    ladders_file.write_text(json.dumps(configured))
    published = sorted(rounds(), key=lambda r: r["occurred_at"])
    cut = harness.BASE_TIME + LIVE_START_DAY * harness.DAY_S
    before, after = [r for r in published if r["occurred_at"] < cut], [r for r in published if r["occurred_at"] >= cut]
    assert before and after
    env = harness.worker_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, partitions=4,
                             LADDERS=json.dumps(configured), PHASE_ONE_BATCH="16", SEASON_REFRESH_S="0.2")
    from stream.pipeline.topics import ensure
    from stream.settings import Settings
    ensure(Settings.from_env(env))
    workers = [harness.Worker(env, tmp_path / f"worker{i}.log").start() for i in range(2)]
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", before)
        harness.wait_drained(stack_redis_url, harness.expected_rounds(before), workers)
        monkeypatch.setenv("REDIS_URL", stack_redis_url)
        early = CliRunner().invoke(app, ["season", "start", "s", "--at", _iso(LIVE_START_DAY - 5), "--name", "S2",
                                         "--backdate", "--ladders", str(ladders_file)])
        assert early.exit_code == 2 and "already registered a round" in early.output, early.output
        started = CliRunner().invoke(app, ["season", "start", "s", "--at", _iso(LIVE_START_DAY), "--name", "S2",
                                           "--backdate", "--ladders", str(ladders_file)])
        assert started.exit_code == 0, started.output
        time.sleep(1.0)  # more than SEASON_REFRESH_S: the notice a start must give (SEASON_NOTICE_S)
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", after)
        harness.wait_drained(stack_redis_url, harness.expected_rounds(published), workers)
    finally:
        harness.stop_workers(workers)
    assert json.loads(ladders_file.read_text()) == json.loads(json.dumps(LADDERS))  # the file holds S2 too
    got = assert_equals_replay(stack_redis_url, published, tmp_path)  # with S2, as the file now holds it
    # the live season took effect: ladder s differs from the same history with S1 only
    without = replay(published, tmp_path, configured)
    moved = [k for k in got if k[0] == "s" and abs(got[k][1] - without[k][1]) > 1e-6]
    assert len(moved) >= 10
