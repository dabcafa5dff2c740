"""Backfill the first half of a history, stream the second half through a real worker (embedded
broker, real redis-server): Redis equals the replay of all of it (within 1e-9)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stream import engine
from stream.cli.main import app
from tests.stream import pipeline_harness as harness

pytestmark = pytest.mark.integration


def test_backfill_half_then_stream_half_equals_replay(local_stack, stack_redis_url: str, fresh_prefix: str,
                                                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rounds = harness.synthetic_rounds(seed=11, count=160, ladders=("alpha", "beta"), pool=30)
    half = len(rounds) // 2
    path = tmp_path / "first-half.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rounds[:half]))
    env = harness.worker_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, partitions=4)
    for name in ("REDIS_URL", "PARTITIONS", "ENGINE_PRESET"):
        monkeypatch.setenv(name, env[name])
    result = CliRunner().invoke(app, ["backfill", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["rated"] == half

    from stream.pipeline.topics import ensure
    from stream.settings import Settings
    ensure(Settings.from_env(env))
    worker = harness.Worker(env, tmp_path / "worker.log").start()
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", rounds[half:])
        harness.wait_drained(stack_redis_url, harness.expected_rounds(rounds), [worker])
    finally:
        worker.stop()
    harness.assert_equals_reference(stack_redis_url, harness.reference(rounds, engine.preset("mmr")))
    # the stream continued the ladders' sequence: seq 1..n, each round once
    client = harness.redis_for(stack_redis_url)
    for ladder in ("alpha", "beta"):
        ids = [r["round_id"] for r in rounds if r["ladder"] == ladder]
        stored = client.zrange(f"ems:rounds:{{{ladder}}}", 0, -1, withscores=True)
        assert [(rid.decode(), int(s)) for rid, s in stored] == [(rid, i + 1) for i, rid in enumerate(ids)]
    client.close()
