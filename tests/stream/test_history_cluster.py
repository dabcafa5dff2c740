"""Backfill, export/import and erase on a real three-node Redis Cluster (REDIS_CLUSTER=true)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stream.cli.main import app
from stream.pipeline.backfill import backfill
from stream.store import keys
from tests.stream import pipeline_harness as harness
from tests.stream.test_backfill import context, history, parsed


def test_backfill_export_import_erase_on_a_cluster(redis_cluster_url: str, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    rounds = history(seed=12, count=60)

    async def body() -> None:
        ctx = context(redis_cluster_url, redis_cluster=True)
        await backfill(ctx, parsed(rounds))
        await ctx.store.close()

    asyncio.run(body())
    reference = harness.reference(rounds, context(redis_cluster_url).ladders.fallback.elo_mmr)
    harness.assert_equals_reference(redis_cluster_url, reference)

    monkeypatch.setenv("REDIS_URL", redis_cluster_url)
    monkeypatch.setenv("REDIS_CLUSTER", "true")
    monkeypatch.setenv("ERASURE_SECRET", "s")
    runner = CliRunner()
    path = tmp_path / "alpha.jsonl"
    assert runner.invoke(app, ["export", "alpha", "--output", str(path)]).exit_code == 0
    client = harness.redis_for(redis_cluster_url)
    for key in client.scan_iter(match="*{alpha*", target_nodes="all"):  # type: ignore[call-arg]
        client.delete(key)
    result = runner.invoke(app, ["import", str(path)])
    assert result.exit_code == 0, result.output
    harness.assert_equals_reference(redis_cluster_url, reference)
    result = runner.invoke(app, ["erase", "alpha", "p001"])
    assert result.exit_code == 0, result.output
    assert not client.exists(keys.player("alpha", "p001"))
    assert client.zscore(keys.leaderboard("alpha"), "p001") is None
    client.close()
