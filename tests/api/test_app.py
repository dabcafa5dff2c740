"""The read API end to end over HTTP, against a real redis-server with seeded ratings."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from aiohttp.test_utils import TestClient

from apiclient import with_client
from readside_data import LADDER, Seeded, seed


@pytest.fixture()
def seeded(redis_url: str) -> Seeded:
    return seed(redis_url)


def get_json(redis_url: str, path: str, **settings: Any) -> tuple[int, Any]:
    async def body(client: TestClient) -> tuple[int, Any]:
        resp = await client.get(path)
        return resp.status, await resp.json()
    return with_client(redis_url, body, **settings)  # type: ignore[no-any-return]


def test_health_and_ladders(redis_url: str, seeded: Seeded) -> None:
    assert get_json(redis_url, "/health") == (200, {"status": "ok", "redis": True, "kafka": None})
    status, data = get_json(redis_url, "/api/ladders")
    assert status == 200 and [l["ladder"] for l in data["ladders"]] == [LADDER]
    status, ladder = get_json(redis_url, f"/api/ladders/{LADDER}")
    assert status == 200 and ladder["rounds_rated"] == 5 and ladder["display"]["mode"] == "conservative"
    disp = json.dumps({"*": {"mode": "fixed-range"}})
    assert get_json(redis_url, f"/api/ladders/{LADDER}", display_config=disp)[1]["display"]["mode"] == "fixed-range"
    assert ladder["model"] == {"name": "mmr-bounded", "params": ladder["model"]["params"]}
    assert ladder["model"]["params"]["history_limit"] == 30
    ladders = json.dumps({LADDER: {"model": "glicko", "params": {"beta": 200.0}, "display": {"mode": "mu"}}})
    _, configured = get_json(redis_url, f"/api/ladders/{LADDER}", ladders=ladders, display_config=disp)
    assert configured["model"]["name"] == "glicko" and configured["model"]["params"]["beta"] == 200.0
    assert configured["display"]["mode"] == "mu"  # LADDERS' display wins over DISPLAY_CONFIG


def test_leaderboard_pagination_and_search(redis_url: str, seeded: Seeded) -> None:
    ranking = seeded.ranking()
    status, page = get_json(redis_url, f"/api/ladders/{LADDER}/leaderboard?offset=3&limit=4")
    assert status == 200 and [r["player"] for r in page["rows"]] == ranking[3:7]
    assert [r["position"] for r in page["rows"]] == [4, 5, 6, 7] and page["total"] == len(ranking)
    status, found = get_json(redis_url, f"/api/ladders/{LADDER}/leaderboard?search=x%5B")
    assert status == 200 and [r["player"] for r in found["rows"]] == ["x[1]"]
    assert found["rows"][0]["position"] == ranking.index("x[1]") + 1


def test_player_round_and_rounds(redis_url: str, seeded: Seeded) -> None:
    best = seeded.ranking()[0]
    status, player = get_json(redis_url, f"/api/ladders/{LADDER}/players/{best}?history=3")
    assert status == 200 and player["position"] == 1 and len(player["history"]) <= 3
    assert player["mu"] == pytest.approx(seeded.mu[best]) and player["tier"]
    assert (player["league"], player["division"]) == (player["tier"], None)  # default config: undivided leagues
    status, rnd = get_json(redis_url, f"/api/ladders/{LADDER}/rounds/r1")
    assert status == 200 and len(rnd["results"]) == seeded.field_sizes["r1"]
    assert rnd["results"][0]["rank"] == 1 and rnd["record"]["status"] == "rated"
    status, rounds = get_json(redis_url, f"/api/ladders/{LADDER}/rounds?limit=2")
    assert [r["round_id"] for r in rounds["rounds"]] == ["r5", "r4"]


@pytest.mark.parametrize("path, status, code", [
    ("/api/ladders/nope/leaderboard", 404, "unknown_ladder"),
    (f"/api/ladders/{LADDER}/players/ghost", 404, "unknown_player"),
    (f"/api/ladders/{LADDER}/rounds/r99", 404, "unknown_round"),
    (f"/api/ladders/{LADDER}/leaderboard?limit=100000", 400, "bad_request"),
    (f"/api/ladders/{LADDER}/leaderboard?offset=-1", 400, "bad_request"),
    (f"/api/ladders/{LADDER}/leaderboard?limit=ten", 400, "bad_request"),
    (f"/api/ladders/{LADDER}/players/{'a' * 200}", 400, "bad_player"),
    (f"/api/ladders/{LADDER}/predict?players=p01", 400, "bad_request"),
    (f"/api/ladders/{LADDER}/predict?players=p01,p01", 400, "duplicate_player"),
    (f"/api/ladders/{LADDER}/predict?players=p01,p02&weight=-1", 400, "bad_request"),
    ("/no/such/route", 404, "not_found"),
])
def test_clear_json_errors(redis_url: str, seeded: Seeded, path: str, status: int, code: str) -> None:
    got_status, body = get_json(redis_url, path)
    assert got_status == status and body["error"] == code and body["message"]


def test_method_and_size_limits(redis_url: str, seeded: Seeded) -> None:
    async def body(client: TestClient) -> list[tuple[int, str]]:
        out = []
        for resp in (await client.delete(f"/api/ladders/{LADDER}/leaderboard"),
                     await client.post(f"/api/ladders/{LADDER}/predict", data=b"x" * 100_000,
                                       headers={"Content-Type": "application/json"}),
                     await client.post(f"/api/ladders/{LADDER}/predict", data=b"{not json",
                                       headers={"Content-Type": "application/json"})):
            out.append((resp.status, (await resp.json())["error"]))
        return out
    assert with_client(redis_url, body) == [(405, "method_not_allowed"), (413, "request_too_large"), (400, "not_json")]


def test_predict_get_and_post(redis_url: str, seeded: Seeded) -> None:
    best, worst = seeded.ranking()[0], seeded.ranking()[-1]

    async def body(client: TestClient) -> tuple[Any, Any]:
        a = await (await client.get(f"/api/ladders/{LADDER}/predict?players={best},{worst}")).json()
        b = await (await client.post(f"/api/ladders/{LADDER}/predict",
                                     json={"players": [worst, "newbie", best], "weight": 2})).json()
        return a, b
    duel, lobby = with_client(redis_url, body)
    assert duel["first_ahead_of_second"] > 0.5 and duel["expected_order"] == [best, worst]
    # in a duel, winning the lobby is finishing ahead of the other (sampled vs exact)
    assert duel["players"][0]["win_probability"] == pytest.approx(duel["first_ahead_of_second"], abs=0.02)
    assert sum(p["win_probability"] for p in lobby["players"]) == pytest.approx(1.0, abs=1e-6)
    assert duel["pairwise"][0][1] + duel["pairwise"][1][0] == pytest.approx(1.0, abs=1e-6)
    assert [p["known"] for p in lobby["players"]] == [True, False, True]
    assert lobby["players"][1]["mu"] == 1500.0 and lobby["model"]["weight"] == 2.0
    assert sum(p["expected_rank"] for p in lobby["players"]) == pytest.approx(6.0)
    assert all(sum(p["rank_distribution"]) == pytest.approx(1.0) for p in lobby["players"])
    assert 0 < lobby["quality"] <= 1


def test_metrics_count_requests(redis_url: str, seeded: Seeded) -> None:
    async def body(client: TestClient) -> str:
        await client.get("/api/ladders")
        resp = await client.get("/metrics")
        assert resp.status == 200
        return await resp.text()
    text = with_client(redis_url, body)
    assert 'ems_api_requests_total{route="/api/ladders",status="200"}' in text


def test_events_stream_sends_update(redis_url: str, seeded: Seeded) -> None:
    async def body(client: TestClient) -> str:
        resp = await client.get(f"/api/ladders/{LADDER}/events")
        assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/event-stream")
        chunk = b""
        while b"\n\n" not in chunk:
            chunk += await resp.content.readany()
        resp.close()
        return chunk.decode()
    text = with_client(redis_url, body)
    assert text.startswith("event: update\ndata: ")
    assert json.loads(text.split("data: ", 1)[1].split("\n")[0])["ladder"] == LADDER


def test_dashboard_is_served(redis_url: str) -> None:
    async def body(client: TestClient) -> tuple[int, str, int]:
        index = await client.get("/")
        js = await client.get("/static/app.js")
        return index.status, await index.text(), js.status
    status, html, js_status = with_client(redis_url, body)
    assert status == 200 and "<script" in html and js_status == 200


def test_predict_uses_the_ladders_model(redis_url: str, seeded: Seeded) -> None:
    """A rating-only ladder is predicted with its model (named in the answer): a newcomer at the
    model's prior, Glicko's E for the pair, TrueSkill's ties and quality."""
    from stream.engine.glicko import GlickoParams
    from stream.engine.models import MODELS
    from stream.engine.predict import RatedModel

    best, worst = seeded.ranking()[0], seeded.ranking()[-1]

    async def body(client: TestClient) -> Any:
        return await (await client.get(f"/api/ladders/{LADDER}/predict?players={best},{worst},newbie")).json()

    glicko = with_client(redis_url, body, ladders=json.dumps({LADDER: {"model": "glicko", "params": {"beta": 200.0}}}))
    assert glicko["model"]["name"] == "glicko" and glicko["model"]["params"]["beta"] == 200.0
    assert glicko["pairwise_tie"] is None and glicko["expected_order"][0] == best
    first, second = glicko["players"][0], glicko["players"][1]
    expected = RatedModel(MODELS["glicko"], GlickoParams(beta=200.0)).odds(first["mu"], first["sigma"], second["mu"], second["sigma"])[0]
    assert glicko["first_ahead_of_second"] == pytest.approx(float(expected), abs=1e-12)
    assert sum(p["expected_rank"] for p in glicko["players"]) == pytest.approx(6.0)

    trueskill = with_client(redis_url, body, ladders=json.dumps({LADDER: {"model": "trueskill"}}))
    assert trueskill["model"]["name"] == "trueskill" and trueskill["players"][2]["mu"] == 25.0
    assert trueskill["pairwise_tie"] is not None and 0 <= trueskill["quality"] <= 1
    mmr = with_client(redis_url, body)
    assert mmr["model"]["name"] == "mmr-bounded" and mmr["model"]["kind"] == "logistic"


def test_predict_says_whether_a_draw_rates_and_how_likely_one_is(redis_url: str, seeded: Seeded) -> None:
    """``model.draws_rate``: whether the ladder's model rates a draw (every preset but mmr, every
    rating-only model); ``draw_margin`` on an Elo-MMR ladder gives pairwise tie probabilities
    (the three outcomes of a pair sum to 1); a rating-only ladder has its own (400 with a margin)."""
    best, worst = seeded.ranking()[0], seeded.ranking()[-1]
    path = f"/api/ladders/{LADDER}/predict?players={best},{worst},newbie"

    async def body(client: TestClient) -> Any:
        return await (await client.get(path + "&draw_margin=30")).json()

    drawn = with_client(redis_url, body)
    assert drawn["model"]["draws_rate"] is True and drawn["model"]["draw_margin"] == 30.0
    tie = np.array(drawn["pairwise_tie"])
    ahead = np.array(drawn["pairwise"])
    assert (tie[~np.eye(3, dtype=bool)] > 0).all()
    assert ahead[0, 1] + ahead[1, 0] + tie[0, 1] == pytest.approx(1.0, abs=1e-9)
    assert sum(p["expected_rank"] for p in drawn["players"]) == pytest.approx(6.0)
    status, plain = get_json(redis_url, f"/api/ladders/{LADDER}/predict?players={best},{worst}",
                             ladders=json.dumps({LADDER: {"model": "mmr"}}))
    assert status == 200 and plain["model"]["draws_rate"] is False and plain["pairwise_tie"] is None
    status, error = get_json(redis_url, path + "&draw_margin=30", ladders=json.dumps({LADDER: {"model": "trueskill"}}))
    assert status == 400 and error["error"] == "bad_request"
    status, trueskill = get_json(redis_url, path, ladders=json.dumps({LADDER: {"model": "trueskill"}}))
    assert status == 200 and trueskill["model"]["draws_rate"] is True and trueskill["pairwise_tie"] is not None


def test_predict_teams_get_and_post(redis_url: str, seeded: Seeded) -> None:
    """``/predict`` of teams (``teams=a,b;c,d`` or the POST form, shares played): win and draw
    probabilities per pair, for two teams the three outcomes summing to 1, match quality; each
    team's belief is its weighted-average member (Elo-MMR for teams)."""
    ranking = seeded.ranking()
    strong, weak = ranking[:2], ranking[-2:]

    async def body(client: TestClient) -> tuple[Any, Any, Any]:
        a = await (await client.get(f"/api/ladders/{LADDER}/predict?teams={','.join(strong)};{','.join(weak)}"
                                    "&draw_margin=25")).json()
        b = await (await client.post(f"/api/ladders/{LADDER}/predict", json={
            "teams": [[strong[0], {"player": weak[0], "weight": 0.5}], [weak[1], "newbie"], [strong[1]]]})).json()
        c = await (await client.get(f"/api/ladders/{LADDER}/predict?teams={','.join(strong)};{','.join(weak)}")).json()
        return a, b, c
    duel, three, no_margin = with_client(redis_url, body)
    assert duel["first_wins"] > duel["second_wins"] and duel["draw_probability"] > 0
    assert duel["first_wins"] + duel["draw_probability"] + duel["second_wins"] == pytest.approx(1.0, abs=1e-9)
    assert no_margin["draw_probability"] == 0.0 and no_margin["first_wins"] > duel["first_wins"]
    assert [p["player"] for p in duel["teams"][0]["players"]] == strong
    assert duel["teams"][0]["mu"] == pytest.approx((seeded.mu[strong[0]] + seeded.mu[strong[1]]) / 2)
    assert duel["expected_order"] == [0, 1] and 0 < duel["quality"] <= 1
    first = three["teams"][0]
    assert first["mu"] == pytest.approx((seeded.mu[strong[0]] + 0.5 * seeded.mu[weak[0]]) / 1.5)
    assert [p["weight"] for p in first["players"]] == [1.0, 0.5]
    assert [p["known"] for p in three["teams"][1]["players"]] == [True, False]
    assert sum(t["win_probability"] for t in three["teams"]) == pytest.approx(1.0, abs=1e-6)
    assert "first_wins" not in three and len(three["draw"]) == 3


@pytest.mark.parametrize("query, code", [
    ("teams=p01,p02", "bad_teams"),
    ("teams=p01;p01", "duplicate_player"),
    ("teams=p01,p02;p03&draw_margin=-1", "bad_request"),
])
def test_predict_teams_errors(redis_url: str, seeded: Seeded, query: str, code: str) -> None:
    status, body = get_json(redis_url, f"/api/ladders/{LADDER}/predict?{query}")
    assert status == 400 and body["error"] == code
