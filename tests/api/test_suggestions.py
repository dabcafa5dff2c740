"""Issue 29 item 10: a typo'd player or ladder is named as such, with the ids that look like it
(the ladder's name index) and the known ladders; the match-up marks its unrated players."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestClient
from typer.testing import CliRunner

from apiclient import with_client
from readside_data import LADDER, Seeded, seed
from stream.cli.main import app
from stream.store.queries import KNOWN_LADDERS_SHOWN, unknown_ladder_message


@pytest.fixture()
def seeded(redis_url: str) -> Seeded:
    return seed(redis_url)


def get_all(redis_url: str, requests: list[tuple[str, str, Any]]) -> list[tuple[int, Any]]:
    async def body(client: TestClient) -> list[tuple[int, Any]]:
        out = []
        for method, path, payload in requests:
            resp = await (client.post(path, json=payload) if method == "POST" else client.get(path))
            out.append((resp.status, await resp.json()))
        return out
    return with_client(redis_url, body)  # type: ignore[no-any-return]


def test_unknown_ladder_errors_list_the_known_ladders(redis_url: str, seeded: Seeded) -> None:
    (s1, leaderboard), (s2, predict), (s3, player) = get_all(redis_url, [
        ("GET", "/api/ladders/blitzz/leaderboard", None),
        ("GET", "/api/ladders/nope/predict?players=a,b", None),
        ("GET", "/api/ladders/blits/players/p01", None)])
    assert (s1, s2, s3) == (404, 404, 404)
    assert leaderboard == {"error": "unknown_ladder",
                           "message": f"unknown ladder 'blitzz'; did you mean '{LADDER}'?; known ladders: {LADDER}"}
    assert predict["message"] == f"unknown ladder 'nope'; known ladders: {LADDER}"
    assert player["message"].startswith("unknown ladder 'blits'; did you mean")


def test_unknown_ladder_message_shows_the_first_known_ones() -> None:
    names = [f"l{i:03d}" for i in range(KNOWN_LADDERS_SHOWN + 5)]
    message = unknown_ladder_message("zz", names)
    assert message.endswith(f"l{KNOWN_LADDERS_SHOWN - 1:03d}, ... ({len(names)} in all)")
    assert unknown_ladder_message("x", []) == "unknown ladder 'x'; known ladders: none yet (nothing has been rated)"


def test_a_typo_d_player_gets_suggestions(redis_url: str, seeded: Seeded) -> None:
    (status, player), (ok, duel), (ok2, lobby) = get_all(redis_url, [
        ("GET", f"/api/ladders/{LADDER}/players/p1", None),
        ("GET", f"/api/ladders/{LADDER}/predict?players=p01,p0l", None),
        ("POST", f"/api/ladders/{LADDER}/predict", {"players": ["p01", "p02", "p03"]})])
    assert status == 404 and player["error"] == "unknown_player"
    assert player["message"].startswith(f"unknown player 'p1' in ladder '{LADDER}'; did you mean 'p01', 'p10', 'p11'")
    assert (ok, ok2) == (200, 200)
    assert duel["unrated"][0]["player"] == "p0l" and duel["players"][1]["known"] is False
    suggestions = duel["unrated"][0]["did_you_mean"]
    assert suggestions and all(s.startswith("p0") for s in suggestions) and len(suggestions) <= 5
    assert lobby["unrated"] == []


def test_the_cli_names_the_known_ladders_and_similar_players(redis_url: str, seeded: Seeded,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_URL", redis_url)
    runner = CliRunner()
    result = runner.invoke(app, ["leaderboard", "blitzz"])
    assert result.exit_code == 1
    assert result.output.strip() == f"unknown ladder 'blitzz'; did you mean '{LADDER}'?; known ladders: {LADDER}"
    result = runner.invoke(app, ["player", LADDER, "p0l"])
    assert result.exit_code == 1 and result.output.startswith(f"unknown player 'p0l' in ladder '{LADDER}'; did you mean 'p0")
    result = runner.invoke(app, ["round", "nope", "r1"])
    assert result.exit_code == 1 and result.output.strip() == f"unknown ladder 'nope'; known ladders: {LADDER}"
