"""``stream export`` / ``stream import``: a ladder restored from its snapshot is the same state, key
for key (its season archives, league threshold sets and seasons of record too), and the stream
continues from it exactly as from the original."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from stream.cli.main import app
from tests.stream import pipeline_harness as harness
from tests.stream.redis_dump import differences, dump
from tests.stream.test_backfill import context, other_db, stream_rounds

EVERYTHING = frozenset[bytes]()


def rounds_of(ladder: str, seed: int, count: int) -> list[dict]:
    return [dict(r, ladder=ladder) for r in harness.synthetic_rounds(seed=seed, count=count, ladders=(ladder,), pool=20)]


def stream(url: str, rounds: list[dict]) -> None:
    async def body() -> None:
        ctx = context(url)
        await stream_rounds(ctx, rounds)
        await ctx.store.close()

    asyncio.run(body())


def seasons(url: str) -> None:
    """A season archive, two league threshold sets and a season of record on ladder ``cup``."""
    import redis.asyncio as aioredis

    from stream.store import seasons as store

    async def body() -> None:
        r = aioredis.Redis.from_url(url)
        standings = {p: {"mu": 1500.0 + i / 3, "rank": i + 1, "league": "Gold"} for i, p in enumerate(("p001", "p002"))}
        await store.write_archive(r, "cup", "S1", standings, {"p001": 1234.5678901234567, "p002": 1000.0})
        for at in (1.5e9, 1.6e9 + 0.123456789):
            await store.record_shares(r, "cup", at, {"thresholds": [None, at / 1e6], "counts": [1, 1]})
        assert (await store.schedule_season(r, "cup", "S2", 4e9 + 0.1234567, 1456.789))[0] == store.SCHEDULED
        await r.aclose()

    asyncio.run(body())


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".csv.gz"])
def test_export_flush_import_is_the_same_state_and_the_stream_continues(
        redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str) -> None:
    rounds = rounds_of("cup", seed=2, count=80)
    rounds.insert(5, {"round_id": "alone", "ladder": "cup", "occurred_at": harness.BASE_TIME,
                      "standings": [{"player": "p001", "rank": 1}]})
    rounds[7]["standings"][0]["player"] = "ünï,\"code\"\n"  # quoting in CSV and JSON
    first, later = rounds[:60], rounds[60:]
    reference_url = other_db(redis_url, 1)
    stream(redis_url, first)
    stream(reference_url, first)
    stream(redis_url, rounds_of("other", seed=3, count=5))  # another ladder: not in the snapshot
    seasons(redis_url)
    seasons(reference_url)
    client = redis.Redis.from_url(redis_url)
    ladder_keys = lambda state: {k: v for k, v in state.items() if b"{cup" in k}  # noqa: E731
    before = ladder_keys(dump(client, skip_fields=EVERYTHING))

    monkeypatch.setenv("REDIS_URL", redis_url)
    runner = CliRunner()
    path = tmp_path / f"cup{suffix}"
    exported = runner.invoke(app, ["export", "cup", "--output", str(path)])
    assert exported.exit_code == 0, exported.output
    refused = runner.invoke(app, ["import", str(path)])
    assert refused.exit_code == 2 and "already has state" in refused.output
    client.flushdb()  # this database only: database 1 holds the reference
    imported = runner.invoke(app, ["import", str(path)])
    assert imported.exit_code == 0, imported.output
    after = dump(client, skip_fields=EVERYTHING)
    assert differences(before, ladder_keys(after)) == []
    assert before == ladder_keys(after)
    assert client.smembers("ems:ladders") == {b"cup"}
    assert client.smembers("ems:season_schedules") == {b"cup"}

    stream(redis_url, later)
    stream(reference_url, later)
    assert differences(dump(client), dump(redis.Redis.from_url(reference_url))) == []
    harness.assert_equals_reference(redis_url, harness.reference(rounds, context(redis_url).ladders.fallback.elo_mmr))


def test_export_of_an_unknown_ladder_and_import_of_a_bad_file(redis_url: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_URL", redis_url)
    runner = CliRunner()
    missing = runner.invoke(app, ["export", "nope", "--output", str(tmp_path / "x.jsonl")])
    assert missing.exit_code == 1 and "no ladder" in missing.output
    assert not (tmp_path / "x.jsonl").exists()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"kind": "snapshot", "id": "L", "fields": {"version": "1"}}) + "\n"
                   + json.dumps({"kind": "player", "id": "a", "fields": {"mu": "1.0"}}) + "\n")
    result = runner.invoke(app, ["import", str(bad)])
    assert result.exit_code == 2 and "display_rating" in result.output
    assert redis.Redis.from_url(redis_url).keys("*") == []  # nothing written
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("{not json\n")
    result = runner.invoke(app, ["import", str(garbage)])
    assert result.exit_code == 2 and "garbage.jsonl:1" in result.output
