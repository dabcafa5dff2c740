"""The read API's season routes: the schedule with the season now and the league thresholds in
effect (then, with ?at=), and an archived season's final standings page; 404 ``no_archive``,
400 on a bad ?at=; every body validates against openapi.json."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import redis.asyncio as aioredis
from aiohttp.test_utils import TestClient

from apiclient import with_client
from stream.store import keys
from stream.store import seasons as store
from test_openapi import check

LADDERS = json.dumps({"ranked": {"seasons": {
    "schedule": [{"name": "S1", "start": "2020-01-01T00:00:00Z"}, {"name": "S2", "start": "2021-01-01T00:00:00Z"}],
    "sigma_to": 250, "placement_rounds": 2, "shares": [0.5, 0.3, 0.2], "bonus_per_day": 10, "bonus_cap": 50},
    "display": {
    "tiers": [["Low", None], ["Mid", 1400], ["High", 1600]]}}})


def seed(redis_url: str) -> None:
    async def go() -> None:
        r = aioredis.Redis.from_url(redis_url)
        await store.record_shares(r, "ranked", 1000.0, {"leagues": ["Low", "Mid", "High"], "thresholds": [None, 1.0, 2.0],
                                                        "counts": [5, 3, 2], "players": 10, "shares": [0.5, 0.3, 0.2],
                                                        "top": None})
        await store.record_shares(r, "ranked", 2000.0, {"leagues": ["Low", "Mid", "High"], "thresholds": [None, 1.5, None],
                                                        "counts": [9, 1, 0], "players": 10, "shares": [0.5, 0.3, 0.2],
                                                        "top": None})
        standings = {f"p{i}": {"mu": 1500.0 + i, "sigma": 80.0, "display_rating": 1340.0 + i, "tier": "Low",
                               "rounds": 3, "rank": 3 - i, "league": "Low", "division": None} for i in range(3)}
        await store.write_archive(r, "ranked", "S1", standings, {p: d["display_rating"] for p, d in standings.items()})
        await r.hset(keys.player("ranked", "p1"), mapping={"display_rating": "1400.0", "tier": "Placement 1",
                                                           "last_time": "1700000000.0"})
        await r.rpush(keys.history("ranked", "p1"), json.dumps({"occurred_at": 1.7e9, "display_rating": 1400.0,
                                                                "mu_before": 1500.0, "sigma_before": 80.0}))
        await r.aclose()

    asyncio.run(go())


def test_season_routes(redis_url: str) -> None:
    seed(redis_url)

    async def body(client: TestClient) -> list[tuple[str, int, Any]]:
        out = []
        for url in ("/api/ladders/ranked/seasons", "/api/ladders/ranked/seasons?at=1500",
                    "/api/ladders/ranked/seasons?at=soon", "/api/ladders/ranked/seasons/S1/leaderboard?limit=2",
                    "/api/ladders/ranked/seasons/S2/leaderboard", "/api/ladders/ranked/players/p1/seasons",
                    "/api/ladders/ranked/players/zz/seasons", "/api/ladders/ranked/player/seasons?id=p1",
                    "/api/ladders/ranked/player/seasons"):
            resp = await client.get(url)
            out.append((url, resp.status, await resp.json()))
        return out

    (now, then, bad, page, missing, player, nobody, by_id, no_id) = with_client(redis_url, body, ladders=LADDERS)
    assert now[1] == 200 and now[2]["current"] == "S2" and now[2]["leagues"]["at"] == 2000.0
    assert [s["name"] for s in now[2]["schedule"]] == ["S1", "S2"] and now[2]["placement_rounds"] == 2
    assert then[1] == 200 and then[2]["current"] is None and then[2]["leagues"]["thresholds"] == [None, 1.0, 2.0]
    assert bad[1] == 400
    assert page[1] == 200 and page[2]["total"] == 3 and [row["player"] for row in page[2]["rows"]] == ["p2", "p1"]
    assert missing[1] == 404 and missing[2]["error"] == "no_archive"
    check("/api/ladders/{ladder}/seasons", "get", 200, now[2])
    check("/api/ladders/{ladder}/seasons", "get", 200, then[2])
    check("/api/ladders/{ladder}/seasons", "get", 400, bad[2])
    check("/api/ladders/{ladder}/seasons/{season}/leaderboard", "get", 200, page[2])
    check("/api/ladders/{ladder}/seasons/{season}/leaderboard", "get", 404, missing[2])
    assert player[1] == 200 and player[2]["season"] == "S2" and player[2]["placement"] is True
    assert player[2]["rounds"] == 1 and player[2]["bonus_pool"] == 50.0  # its pool full again by now
    assert player[2]["league_by_share"] == "Mid"  # 1400 under the thresholds in effect now: Mid from 1.5
    assert [p["season"] for p in player[2]["past"]] == ["S1"] and player[2]["past"][0]["rank"] == 2
    assert nobody[1] == 404 and nobody[2]["error"] == "unknown_player"
    check("/api/ladders/{ladder}/players/{player}/seasons", "get", 200, player[2])
    check("/api/ladders/{ladder}/players/{player}/seasons", "get", 404, nobody[2])
    assert by_id[1] == 200 and by_id[2] == player[2] and no_id[1] == 400
    check("/api/ladders/{ladder}/player/seasons", "get", 200, by_id[2])
    check("/api/ladders/{ladder}/player/seasons", "get", 400, no_id[2])


def test_a_season_started_in_redis_shows_without_a_restart(redis_url: str) -> None:
    async def body(client: TestClient) -> list[Any]:
        before = await (await client.get("/api/ladders/ranked/seasons")).json()
        r = aioredis.Redis.from_url(redis_url)
        assert await store.schedule_season(r, "ranked", "S3", 1.9e9, 1450.0) == (store.SCHEDULED, "")
        await r.aclose()
        await asyncio.sleep(0.3)  # SEASON_REFRESH_S below
        after = await (await client.get("/api/ladders/ranked/seasons")).json()
        return [before, after]

    before, after = with_client(redis_url, body, ladders=LADDERS, season_refresh_s=0.1)
    assert [s["name"] for s in before["schedule"]] == ["S1", "S2"]
    assert [s["name"] for s in after["schedule"]] == ["S1", "S2", "S3"] and after["schedule"][2]["centre"] == 1450.0
    check("/api/ladders/{ladder}/seasons", "get", 200, after)


def test_predict_reads_a_returning_players_season_reset_belief(redis_url: str) -> None:
    """``q`` last played in S1; now is in S2: the prediction rates from his soft-reset belief (the
    engine's, as his next round will), ``p1`` (played in S2) from his stored one."""
    import numpy as np

    from stream.engine.ladders import parse_ladders
    from stream.engine.seasons import seasoned_view

    async def seed_players() -> None:
        r = aioredis.Redis.from_url(redis_url)
        await r.sadd(keys.ladders(), "ranked")
        await r.hset(keys.player("ranked", "q"), mapping={"mu": "1700.0", "sigma": "80.0", "last_time": "1600000000.0"})
        await r.hset(keys.player("ranked", "p1"), mapping={"mu": "1500.0", "sigma": "90.0", "last_time": "1700000000.0"})
        await r.aclose()

    asyncio.run(seed_players())

    async def body(client: TestClient) -> Any:
        return await (await client.get("/api/ladders/ranked/predict?players=q,p1")).json()

    doc = with_client(redis_url, body, ladders=LADDERS)
    got = {p["player"]: (p["mu"], p["sigma"]) for p in doc["players"]}
    params = parse_ladders(LADDERS).of("ranked").elo_mmr
    mu, sigma = seasoned_view(np.array([1700.0, 1500.0]), np.array([80.0, 90.0]), np.array([1.6e9, 1.7e9]),
                              1.8e9, params)
    assert got["q"] == (mu[0], sigma[0]) and got["q"][1] == 250.0  # sigma raised to sigma_to
    assert got["p1"] == (1500.0, 90.0)
    check("/api/ladders/{ladder}/predict", "get", 200, doc)
