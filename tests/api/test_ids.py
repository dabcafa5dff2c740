"""Ids that need encoding in URLs, through every id-bearing route of the read API, over a real
Redis holding them: player and round ids with '/', '%', '?', '#', '+', spaces, Unicode, control characters, a literal
"%2F" next to a real "/", the dot-segments "." and ".." (query forms only), and a ladder name with
':' (the one LADDER_PATTERN character a client may encode)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
from aiohttp.test_utils import TestClient

from apiclient import get_all, with_client
from readside_data import Seeded, seed

LADDER = "cup:2026.a-b_c"
PLAYERS = ["a/b", "a%2Fb", "50%", "x y", "a+b", "q?x#y", "ünï 👾", "a\\b", "/lead", "trail/", "...",
           "p01", "p02", "a\x00b", "tab\there", "line\nbreak", "\x1b[31mred"]
DOT_PLAYERS = [".", ".."]
ROUNDS = ["2026/11/22 r1", "final%", "é/ü", "..", "cr\rlf\n"]


def enc(value: str) -> str:
    """A whole id as one path segment or query value, as a client encodes it (encodeURIComponent)."""
    return quote(value, safe="")


@pytest.fixture()
def seeded(redis_url: str) -> Seeded:
    return seed(redis_url, ladder=LADDER, players=PLAYERS + DOT_PLAYERS, round_ids=ROUNDS)


def test_every_player_by_its_encoded_path_segment(redis_url: str, seeded: Seeded) -> None:
    ladder = f"/api/ladders/{enc(LADDER)}"
    answers = get_all(redis_url, [f"{ladder}/players/{enc(p)}?history=2" for p in PLAYERS])
    assert [status for status, _ in answers] == [200] * len(PLAYERS)
    assert [body["player"] for _, body in answers] == PLAYERS
    assert [body["mu"] for _, body in answers] == [pytest.approx(seeded.mu[p]) for p in PLAYERS]
    assert [body["ladder"] for _, body in answers] == [LADDER] * len(PLAYERS)
    # "a/b" and the literal "a%2Fb" are two players, told apart whatever the case of the escape
    assert seeded.mu["a/b"] != seeded.mu["a%2Fb"]
    lower = get_all(redis_url, [f"{ladder}/players/a%2fb", f"{ladder}/players/a%252fb"])
    assert [(status, body.get("player")) for status, body in lower] == [(200, "a/b"), (404, None)]  # "a%2fb": nobody


def test_every_round_by_its_encoded_path_segment(redis_url: str, seeded: Seeded) -> None:
    ladder = f"/api/ladders/{enc(LADDER)}"
    reachable = [r for r in ROUNDS if r not in (".", "..")]
    answers = get_all(redis_url, [f"{ladder}/rounds/{enc(r)}" for r in reachable] + [f"{ladder}/rounds?limit=10"])
    *rounds, listing = answers
    assert [(status, body["round_id"]) for status, body in rounds] == [(200, r) for r in reachable]
    assert [len(body["results"]) for _, body in rounds] == [seeded.field_sizes[r] for r in reachable]
    assert all(c["round_id"] == body["round_id"] for _, body in rounds for c in body["results"])
    assert [r["round_id"] for r in listing[1]["rounds"]] == ROUNDS[::-1]


def test_dot_segment_ids_and_any_id_through_the_query_forms(redis_url: str, seeded: Seeded) -> None:
    ladder = f"/api/ladders/{enc(LADDER)}"
    players = DOT_PLAYERS + PLAYERS
    answers = get_all(redis_url, [f"{ladder}/player?id={enc(p)}&history=1" for p in players]
                      + [f"{ladder}/round?id={enc(r)}" for r in ROUNDS])
    assert [(status, body.get("player")) for status, body in answers[:len(players)]] == [(200, p) for p in players]
    assert [body["mu"] for _, body in answers[:len(players)]] == [pytest.approx(seeded.mu[p]) for p in players]
    assert all(len(body["history"]) == 1 for _, body in answers[:len(players)])
    assert [(status, body.get("round_id")) for status, body in answers[len(players):]] == [(200, r) for r in ROUNDS]
    # a bare '+' in a query value is a space (form encoding): "a+b" must be sent as a%2Bb
    (status, body), = get_all(redis_url, [f"{ladder}/player?id=x+y"])
    assert (status, body["player"]) == (200, "x y")


def test_the_ladder_routes_with_an_encoded_ladder_name(redis_url: str, seeded: Seeded) -> None:
    ladder = f"/api/ladders/{enc(LADDER)}"
    assert "%3A" in ladder
    (s1, summary), (s2, page), (s3, found), (s4, duel) = get_all(redis_url, [
        ladder, f"{ladder}/leaderboard?limit=200", f"{ladder}/leaderboard?search={enc('a/')}",
        f"{ladder}/predict?players={enc('a/b')},{enc('ünï 👾')},{enc('..')}",
    ])
    assert (s1, s2, s3, s4) == (200, 200, 200, 200)
    assert summary["ladder"] == LADDER and summary["rounds_rated"] == len(ROUNDS)
    assert sorted(row["player"] for row in page["rows"]) == sorted(seeded.mu)
    assert [row["player"] for row in found["rows"]] == ["a/b"]
    assert [p["player"] for p in duel["players"]] == ["a/b", "ünï 👾", ".."]
    assert all(p["known"] for p in duel["players"])


def test_predict_post_takes_ids_a_comma_list_cannot(redis_url: str, seeded: Seeded) -> None:
    async def body(client: TestClient) -> Any:
        resp = await client.post(f"/api/ladders/{enc(LADDER)}/predict", json={"players": ["a,b", "a/b", "."]})
        return resp.status, await resp.json()
    status, prediction = with_client(redis_url, body)
    assert status == 200
    assert [(p["player"], p["known"]) for p in prediction["players"]] == [("a,b", False), ("a/b", True), (".", True)]


@pytest.mark.parametrize("path, status, code", [
    ("/players/%FF", 400, "bad_player"),             # not UTF-8
    ("/players/a%00c", 404, "unknown_player"),       # a control character is an id like any other
    ("/rounds/%C3", 400, "bad_round"),
    ("/player", 400, "bad_player"),                  # the query form without an id
    ("/player?id=", 400, "bad_player"),
    ("/round?id=%0A", 404, "unknown_round"),
    (f"/players/{enc('a/b/c')}", 404, "unknown_player"),
    ("/player?id=a/b/c", 404, "unknown_player"),
    (f"/rounds/{enc('2026/11/22')}", 404, "unknown_round"),
    ("/round?id=.", 404, "unknown_round"),
])
def test_bad_and_unknown_ids(redis_url: str, seeded: Seeded, path: str, status: int, code: str) -> None:
    (got, body), = get_all(redis_url, [f"/api/ladders/{enc(LADDER)}{path}"])
    assert (got, body["error"]) == (status, code) and body["message"]


def test_a_bad_ladder_segment_is_400(redis_url: str, seeded: Seeded) -> None:
    (status, body), = get_all(redis_url, ["/api/ladders/%FF/rounds"])
    assert (status, body["error"]) == (400, "bad_ladder")
