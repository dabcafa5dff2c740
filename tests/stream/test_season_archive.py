"""Season archives on a real Redis: a ladder rated through the handlers across a season start;
``stream season archive L S1`` keeps every S1 player's final standing, equal to the replay of the
S1 rounds alone (players who played on into S2 from their history, the others from their stored
state, untouched by the lazy reset), ranked by display rating with league and division;
``stream leaderboard L --season S1`` reads it back; a season the ladder lacks is exit 2; ``stream
erase`` removes a player from the archives."""

from __future__ import annotations

import asyncio
import json

import pytest
from typer.testing import CliRunner

from stream.batch.models import replay_ladders
from stream.cli.main import app
from stream.engine.display import display_rating, league_division
from stream.engine.ladders import parse_ladders
from stream.engine.season_schedule import iso_time
from stream.pipeline.messages import Incoming
from stream.pipeline.phase_one import handle_rounds
from test_ladders_handlers import context
from test_league_shares_redis import rounds
from test_phase_one_batch import apply

T0 = 1.7e9  # rounds(): round k at T0 + 600 k
S2 = T0 + 600.0 * 300 + 1
LADDERS = json.dumps({"ranked": {"model": "mmr-bounded", "display": {"divisions": 3}, "seasons": {
    "schedule": [{"name": "S1", "start": iso_time(T0 - 1)}, {"name": "S2", "start": iso_time(S2)}],
    "sigma_to": 250.0, "mu_pull": 0.3, "placement_rounds": 2, "bonus_per_day": 8640000.0, "bonus_cap": 30.0}}})


def test_archive_keeps_a_seasons_final_standings(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    played = rounds(500, seed=9)  # 300 rounds of S1, 200 of S2

    async def body() -> None:
        ctx = context(redis_url, LADDERS)
        for lo in range(0, len(played), 64):
            await apply(ctx, await handle_rounds(ctx, [Incoming(r.to_json().encode()) for r in played[lo:lo + 64]]))
        await ctx.store.close()

    asyncio.run(body())
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("LADDERS", LADDERS)
    runner = CliRunner()
    done = runner.invoke(app, ["season", "archive", "ranked", "S1", "--json"])
    assert done.exit_code == 0, done.output
    s1 = [r for r in played if r.occurred_at < S2]
    want = {p: (mu, sigma) for _, p, mu, sigma, _ in replay_ladders(s1, parse_ladders(LADDERS)).ratings()}
    assert json.loads(done.output)["players"] == len(want)
    shown = runner.invoke(app, ["leaderboard", "ranked", "--season", "S1", "--json", "--top", "10000"])
    assert shown.exit_code == 0, shown.output
    rows = json.loads(shown.output)["rows"]
    assert {row["player"] for row in rows} == set(want)
    cfg = parse_ladders(LADDERS).of("ranked").display
    for rank, row in enumerate(rows, start=1):
        mu, sigma = want[row["player"]]
        assert abs(row["mu"] - mu) <= 1e-9 and abs(row["sigma"] - sigma) <= 1e-9, row
        assert abs(row["display_rating"] - float(display_rating(mu, sigma, cfg))) <= 1e-9
        assert row["rank"] == rank and (row["league"], row["division"]) == league_division(row["tier"], cfg)
    assert [r["display_rating"] for r in rows] == sorted((r["display_rating"] for r in rows), reverse=True)
    assert any(r["division"] is not None for r in rows)
    # players who played on into S2 moved on; their S1 standing did not
    live = runner.invoke(app, ["leaderboard", "ranked", "--json", "--top", "10000"])
    now = {row["player"]: row["mu"] for row in json.loads(live.output)["rows"]}
    assert sum(abs(now[p] - want[p][0]) > 1e-6 for p in want) > 50
    missing = runner.invoke(app, ["season", "archive", "ranked", "S9"])
    assert missing.exit_code == 2 and "no season 'S9'" in missing.output
    none = runner.invoke(app, ["leaderboard", "ranked", "--season", "S2"])
    assert none.exit_code != 0 and "no archive of season 'S2'" in none.output
    # an erased player leaves the archives too
    victim = rows[0]["player"]
    monkeypatch.setenv("ERASURE_SECRET", "s3cret")
    assert runner.invoke(app, ["erase", "ranked", victim]).exit_code == 0
    after = json.loads(runner.invoke(app, ["leaderboard", "ranked", "--season", "S1", "--json", "--top", "10000"]).output)
    assert after["total"] == len(want) - 1 and victim not in {row["player"] for row in after["rows"]}


def test_a_players_season_view(redis_url: str) -> None:
    """Points = display rating + the bonus he took this season (the pool refills fast here: 100
    points a second up to 30); his past season is his archived S1 standing."""
    from stream.engine.bonus import bonus
    from stream.pipeline.seasons import archive_season, player_season

    played = rounds(500, seed=9)

    async def body() -> None:
        ctx = context(redis_url, LADDERS)
        for lo in range(0, len(played), 64):
            await apply(ctx, await handle_rounds(ctx, [Incoming(r.to_json().encode()) for r in played[lo:lo + 64]]))
        r = ctx.store.client
        cfg, display = ctx.ladder("ranked"), ctx.display("ranked")
        await archive_season(r, "ranked", "S1", cfg, display)
        late = [r_ for r_ in played if r_.occurred_at >= S2]
        player = max({p for r_ in late for p in r_.players()}, key=lambda p: sum(p in x.players() for x in late))
        doc = await player_season(r, "ranked", player, cfg, display, now=S2 + 86_400.0 * 30)
        assert doc is not None and doc["season"] == "S2"
        mine = [x for x in late if player in x.players()]
        assert doc["rounds"] == len(mine)
        history = [json.loads(e) for e in await r.lrange(f"ems:history:{{ranked|{player}}}", 0, -1)]
        season = [c for c in history if c["occurred_at"] >= S2]
        deltas = [c["display_rating"] - float(display_rating(c["mu_before"], c["sigma_before"], display)) for c in season]
        want = bonus(S2, [c["occurred_at"] for c in season], deltas, cfg.seasons.bonus, S2 + 86_400.0 * 30)
        assert doc["bonus_taken"] == want.total and doc["points"] == doc["display_rating"] + want.total
        assert want.total > 0 and doc["bonus_pool"] == 30.0  # refilled to the cap a month later
        assert doc["placement"] == (len(mine) < 2)
        in_s1 = any(player in x.players() for x in played if x.occurred_at < S2)
        assert in_s1 and [p["season"] for p in doc["past"]] == ["S1"] and doc["past"][0]["rank"] >= 1
        assert await player_season(r, "ranked", "nobody", cfg, display, now=S2) is None
        await ctx.store.close()

    asyncio.run(body())
