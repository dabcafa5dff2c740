"""``stream season start`` / ``list``: a season start appended to a ladder's schedule in the
LADDERS file (validated, atomically rewritten) or printed as the new LADDERS JSON, and added to
the schedule of record in Redis (refused when the ladder has a round at or after the start);
bad input (a start within the notice, a start not after the last, a bad time, a duplicate name)
is an error, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from stream.cli.main import app
from stream.engine.ladders import parse_ladders

runner = CliRunner()


def test_start_appends_to_the_file_and_list_shows_it(tmp_path: Path) -> None:
    path = tmp_path / "ladders.json"
    path.write_text(json.dumps({"ranked": {"model": "mmr", "seasons": {"sigma_to": 250}}, "*": {"model": "mmx"}}))
    result = runner.invoke(app, ["season", "start", "ranked", "--at", "2031-01-01T00:00:00Z", "--ladders", str(path), "--config-only"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["season", "start", "ranked", "--at", "2031-04-01T00:00:00Z", "--name", "Spring",
                                 "--ladders", str(path), "--config-only"])
    assert result.exit_code == 0, result.output
    season = parse_ladders(path.read_text()).of("ranked").elo_mmr.season
    assert season is not None and season.names == ("S1", "Spring") and season.sigma_to == 250.0
    listed = runner.invoke(app, ["season", "list", "ranked", "--ladders", str(path), "--json", "--config-only"])
    assert listed.exit_code == 0, listed.output
    doc = json.loads(listed.output)
    assert [s["name"] for s in doc["schedule"]] == ["S1", "Spring"] and doc["current"] is None


def test_start_prints_the_new_ladders_for_json_text() -> None:
    result = runner.invoke(app, ["season", "start", "new", "--at", "2031-01-01T00:00:00Z", "--ladders", "{}", "--config-only"])
    assert result.exit_code == 0, result.output
    text = result.output[:result.output.index("season S1")]
    assert parse_ladders(text).of("new").elo_mmr.season.names == ("S1",)


def test_bad_starts_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "ladders.json"
    path.write_text(json.dumps({"ranked": {"seasons": {"schedule": [{"name": "S1", "start": "2031-01-01T00:00:00Z"}]}}}))
    before = path.read_text()
    cases = {("--at", "2030-06-01T00:00:00Z"): "after the last one",
             ("--at", "tomorrow"): "not an ISO 8601",
             ("--at", "2032-01-01T00:00:00Z", "--name", "S1"): "already has a season named"}
    for args, why in cases.items():
        result = runner.invoke(app, ["season", "start", "ranked", *args, "--ladders", str(path), "--config-only"])
        assert result.exit_code == 2 and why in result.output, (args, result.output)
    assert path.read_text() == before
    missing = runner.invoke(app, ["season", "start", "ranked", "--ladders", str(tmp_path / "missing.json"), "--config-only"])
    assert missing.exit_code == 2 and "cannot read" in missing.output
    # a past start is allowed for a history to replay
    (tmp_path / "replay.json").write_text("{}")
    ok = runner.invoke(app, ["season", "start", "ranked", "--at", "2020-01-01T00:00:00Z", "--backdate", "--ladders",
                             str(tmp_path / "replay.json"), "--config-only"])
    assert ok.exit_code == 0, ok.output
    assert parse_ladders((tmp_path / "replay.json").read_text()).of("ranked").elo_mmr.season.starts == (1577836800.0,)


def test_centre_from_the_ladder_is_frozen_in_the_schedule(tmp_path: Path, redis_url: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import redis

    from stream.store import keys

    client = redis.Redis.from_url(redis_url)
    for name, mu in (("a", 1400.0), ("b", 1700.0), ("c", 1600.0)):
        client.hset(keys.player("ranked", name), mapping={"mu": repr(mu)})
        client.zadd(keys.leaderboard("ranked"), {name: mu - 100})
    client.close()
    monkeypatch.setenv("REDIS_URL", redis_url)
    path = tmp_path / "ladders.json"
    path.write_text(json.dumps({"ranked": {"seasons": {"mu_pull": 0.5}}}))
    result = runner.invoke(app, ["season", "start", "ranked", "--at", "2031-01-01T00:00:00Z", "--centre-from-ladder",
                                 "--ladders", str(path)])
    assert result.exit_code == 0, result.output
    season = parse_ladders(path.read_text()).of("ranked").elo_mmr.season
    assert season is not None and season.centres == (1566.6666666666667,)
    both = runner.invoke(app, ["season", "start", "ranked", "--at", "2032-01-01T00:00:00Z", "--centre", "1500",
                               "--centre-from-ladder", "--ladders", str(path)])
    assert both.exit_code == 2 and "not both" in both.output
    empty = runner.invoke(app, ["season", "start", "nobody", "--at", "2032-01-01T00:00:00Z", "--centre-from-ladder",
                                "--ladders", str(path)])
    assert empty.exit_code == 2 and "no players" in empty.output


def test_start_writes_the_schedule_of_record_refused_at_or_before_a_registered_round(
        tmp_path: Path, redis_url: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    import redis

    from stream.store import keys
    from stream.store.seasons import scheduled_seasons

    monkeypatch.setenv("REDIS_URL", redis_url)
    client = redis.Redis.from_url(redis_url)
    client.hset(keys.ladder("ranked"), mapping={"occurred_max": "1924992000.5"})  # 2031-01-01T00:00:00.5Z
    client.close()
    path = tmp_path / "ladders.json"
    path.write_text(json.dumps({"ranked": {"seasons": {"sigma_to": 250}}}))
    soon = runner.invoke(app, ["season", "start", "ranked", "--at", "2020-01-01T00:00:00Z", "--ladders", str(path)])
    assert soon.exit_code == 2 and "notice" in soon.output, soon.output
    late = runner.invoke(app, ["season", "start", "ranked", "--at", "1924992000.5", "--backdate", "--ladders", str(path)])
    assert late.exit_code == 2 and "already registered a round" in late.output, late.output
    ok = runner.invoke(app, ["season", "start", "ranked", "--at", "1924992000.75", "--backdate", "--ladders", str(path)])
    assert ok.exit_code == 0, ok.output
    again = runner.invoke(app, ["season", "start", "ranked", "--at", "2040-01-01T00:00:00Z", "--name", "S1",
                                "--ladders", json.dumps({"ranked": {}})])
    assert again.exit_code == 2 and "already has a season named 'S1'" in again.output, again.output

    async def held() -> dict:
        import redis.asyncio

        r = redis.asyncio.Redis.from_url(redis_url)
        try:
            return await scheduled_seasons(r)
        finally:
            await r.aclose()

    assert asyncio.run(held()) == {"ranked": [{"name": "S1", "start": 1924992000.75}]}
    listed = runner.invoke(app, ["season", "list", "ranked", "--ladders", json.dumps({"ranked": {}}), "--json"])
    assert listed.exit_code == 0 and [e["name"] for e in json.loads(listed.output)["schedule"]] == ["S1"], listed.output
    assert parse_ladders(path.read_text()).of("ranked").elo_mmr.season.starts == (1924992000.75,)
