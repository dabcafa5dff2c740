"""Pictures over time through the read API, over a real Redis with seeded rounds: rounds over time
(/activity) and a player's leaderboard place and tier after each round (/players/{p}/ranks)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest
import redis

from apiclient import get_all
from readside_data import DAY, LADDER, START, Seeded, seed
from stream.engine.display import DisplayConfig
from stream.store import keys


@pytest.fixture()
def seeded(redis_url: str) -> Seeded:
    return seed(redis_url)


def test_rounds_over_time(redis_url: str, seeded: Seeded) -> None:
    (s3, three), (s60, every), (s1, last), (missing, _) = get_all(redis_url, [
        f"/api/ladders/{LADDER}/activity?points=3", f"/api/ladders/{LADDER}/activity",
        f"/api/ladders/{LADDER}/activity?points=1", "/api/ladders/nope/activity"])
    assert (s3, s60, s1, missing) == (200, 200, 200, 404)
    assert three["rounds"] == 5 and three["rounds_rated"] == 5
    assert [(p["rounds"], p["round_id"], p["seq"]) for p in three["points"]] == [(1, "r1", 1), (3, "r3", 3),
                                                                                 (5, "r5", 5)]
    # the seeded round t (0-based) occurred at START + t days and was rated 2 s later
    assert [p["rated_at"] for p in three["points"]] == [START + 2, START + 2 * DAY + 2, START + 4 * DAY + 2]
    assert [p["round_id"] for p in every["points"]] == seeded.rounds  # fewer rounds than points: all of them
    assert [p["rounds"] for p in last["points"]] == [5]


def test_rounds_over_time_counts_rounds_not_rated(redis_url: str, seeded: Seeded) -> None:
    r = redis.Redis.from_url(redis_url)
    r.zadd(keys.rounds(LADDER), {"r6": 6})
    r.hset(keys.round_record(LADDER, "r6"), mapping={"round_id": "r6", "seq": 6, "status": "pending",
                                                    "occurred_at": repr(START + 5 * DAY)})
    r.close()
    (status, body), = get_all(redis_url, [f"/api/ladders/{LADDER}/activity?points=2"])
    assert status == 200 and (body["rounds"], body["rounds_rated"]) == (6, 5)
    assert body["points"][-1] == {"rounds": 6, "round_id": "r6", "seq": 6, "status": "pending",
                                  "occurred_at": START + 5 * DAY, "rated_at": None}


def history(redis_url: str, player: str) -> list[dict[str, Any]]:
    r = redis.Redis.from_url(redis_url)
    try:
        return [json.loads(h) for h in r.lrange(keys.history(LADDER, player), 0, -1)]
    finally:
        r.close()


def test_rank_timeline_against_todays_leaderboard(redis_url: str, seeded: Seeded) -> None:
    """Each point's place is 1 + the other players whose rating today is above the rating then; the
    newest point's place is the player's place today; tiers are the recorded ones."""
    players = sorted(seeded.display)
    answers = get_all(redis_url, [f"/api/ladders/{LADDER}/players/{quote(p, safe='')}/ranks" for p in players])
    ranking = seeded.ranking()
    for player, (status, body) in zip(players, answers):
        assert status == 200
        entries = history(redis_url, player)
        assert [p["round_id"] for p in body["points"]] == [e["round_id"] for e in entries]
        assert [p["tier"] for p in body["points"]] == [e["tier"] or None for e in entries]
        assert [(p["rank"], p["field_size"]) for p in body["points"]] == [(e["rank"], e["field_size"]) for e in entries]
        expected = [1 + sum(1 for q, shown in seeded.display.items() if q != player and shown > e["display_rating"])
                    for e in entries]
        assert [p["position"] for p in body["points"]] == expected
        assert body["position"] == ranking.index(player) + 1 == body["points"][-1]["position"]
        assert body["tiers"] == list(DisplayConfig().tier_names)


def test_rank_timeline_query_form_history_limit_and_errors(redis_url: str, seeded: Seeded) -> None:
    best = seeded.ranking()[0]
    (s2, two), (s0, none), (sq, by_id), (ghost, err), (bad, _) = get_all(redis_url, [
        f"/api/ladders/{LADDER}/players/{best}/ranks?history=2",
        f"/api/ladders/{LADDER}/players/{best}/ranks?history=0",
        f"/api/ladders/{LADDER}/player/ranks?id={best}", f"/api/ladders/{LADDER}/players/ghost/ranks",
        f"/api/ladders/{LADDER}/players/{best}/ranks?history=-1"])
    assert (s2, s0, sq, ghost, bad) == (200, 200, 200, 404, 400)
    assert [p["round_id"] for p in two["points"]] == [e["round_id"] for e in history(redis_url, best)][-2:]
    assert none["points"] == [] and none["position"] == 1
    assert by_id["points"][-2:] == two["points"] and err["error"] == "unknown_player"
