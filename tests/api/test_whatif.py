"""``POST /api/ladders/{ladder}/what-if`` over HTTP against a real redis-server: the answer's
fields and tier targets, nothing written, and a 4xx with a code (never a 500) for bad input."""

from __future__ import annotations

import json
from urllib.parse import quote
from typing import Any

import pytest
import redis
from aiohttp.test_utils import TestClient

from apiclient import with_client
from whatif_data import DAY, LADDER, PLAYERS, START, seed_states, snapshot, standings
from stream.api import whatif as whatif_api
from stream.contracts.round import ROUND_REASONS

def post(url: str, path: str, body: bytes | str | Any, **settings: Any) -> tuple[int, Any]:
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)

    async def go(client: TestClient) -> tuple[int, Any]:
        resp = await client.post(path, data=data)
        return resp.status, await resp.json()
    return with_client(url, go, engine_preset="mmr", **settings)  # type: ignore[no-any-return]


def test_what_if_answers_and_writes_nothing(redis_url: str) -> None:
    states = seed_states(redis_url)
    before = snapshot(redis_url)
    order = PLAYERS[::-1] + ["rookie 🐣"]
    status, got = post(redis_url, f"/api/ladders/{LADDER}/what-if",
                       {"occurred_at": START + 20 * DAY, "standings": standings(order), "explain_for": [PLAYERS[3]]})
    assert status == 200, got
    assert snapshot(redis_url) == before and got["writes"] is False
    assert got["in_flight"] == []
    assert [c["player"] for c in got["changes"]] == order and got["field_size"] == len(order)
    for c in got["changes"]:
        known = c["player"] in states
        assert c["known"] is known
        if known:
            assert c["mu_before"] == states[c["player"]].mu and c["sigma_before"] == states[c["player"]].sigma
            assert c["tier_before"] == "Gold"
        assert c["delta"] == pytest.approx(c["mu_after"] - c["mu_before"])
        assert c["interval"] == pytest.approx([c["mu_after"] - 2 * c["sigma_after"], c["mu_after"] + 2 * c["sigma_after"]])
    first, last = got["changes"][0], got["changes"][-2]
    assert first["delta"] > last["delta"]  # winning beats losing
    (target,) = got["targets"]
    assert target["player"] == PLAYERS[3] and target["tier"] == "Gold" and target["available"]
    assert target["next_tier"] == "Platinum"
    # the answer's interval follows the ladder's display entry
    ladders = json.dumps({"*": {"model": "mmr", "display": {"interval_z": 1.0}}})
    _, narrow = post(redis_url, f"/api/ladders/{LADDER}/what-if", {"standings": standings(order)}, ladders=ladders)
    c = narrow["changes"][0]
    assert not any(x["provisional"] for x in narrow["changes"])  # no rule: nobody provisional
    strict = json.dumps({"*": {"model": "mmr", "display": {"provisional_rounds": 7}}})
    _, marked = post(redis_url, f"/api/ladders/{LADDER}/what-if", {"standings": standings(order)}, ladders=strict)
    assert [x["provisional"] for x in marked["changes"]] == [x["rounds_played"] < 7 for x in marked["changes"]]
    assert {x["provisional"] for x in marked["changes"]} == {True, False}  # the rookie, the six-round regulars
    assert narrow["interval_z"] == 1.0 and c["interval"] == pytest.approx([c["mu_after"] - c["sigma_after"],
                                                                              c["mu_after"] + c["sigma_after"]])


def test_tier_targets_are_the_worst_ranks_that_reach_the_tier(redis_url: str) -> None:
    """Rating the round again with the player moved to the target rank reaches the tier; one rank
    worse does not (each checked by a plain what-if of the moved standings)."""
    seed_states(redis_url)
    when = START + 7 * DAY
    for player in (PLAYERS[0], PLAYERS[10]):
        _, got = post(redis_url, f"/api/ladders/{LADDER}/what-if",
                      {"occurred_at": when, "standings": standings(PLAYERS), "explain_for": [player]})
        (target,) = got["targets"]
        names = [t for t, _ in __import__("stream.engine.display", fromlist=["x"]).DEFAULT_TIERS]
        for rank_key, tier_name in (("rank_for_next", target["next_tier"]), ("rank_to_keep", target["tier"])):
            rank = target[rank_key]
            others = [p for p in PLAYERS if p != player]
            if rank is None:
                moved = [player] + others
                _, best = post(redis_url, f"/api/ladders/{LADDER}/what-if", {"occurred_at": when, "standings": standings(moved)})
                assert names.index(next(c for c in best["changes"] if c["player"] == player)["tier"]) < names.index(tier_name)
                continue
            moved = others[:rank - 1] + [player] + others[rank - 1:]
            _, at = post(redis_url, f"/api/ladders/{LADDER}/what-if", {"occurred_at": when, "standings": standings(moved)})
            assert names.index(next(c for c in at["changes"] if c["player"] == player)["tier"]) >= names.index(tier_name)
            if rank < len(PLAYERS):
                worse = others[:rank] + [player] + others[rank:]
                _, below = post(redis_url, f"/api/ladders/{LADDER}/what-if", {"occurred_at": when, "standings": standings(worse)})
                assert names.index(next(c for c in below["changes"] if c["player"] == player)["tier"]) < names.index(tier_name)


GOOD = {"standings": standings(PLAYERS[:4])}


@pytest.mark.parametrize("path, body, status, code", [
    ("/api/ladders/nope/what-if", GOOD, 404, "unknown_ladder"),
    (f"/api/ladders/{'L' * 300}/what-if", GOOD, 400, "bad_ladder"),
    (f"/api/ladders/{LADDER}/what-if", b"{not json", 400, "not_json"),
    (f"/api/ladders/{LADDER}/what-if", b"\xff\xfe", 400, "not_json"),
    (f"/api/ladders/{LADDER}/what-if", [1, 2], 400, "not_json"),
    (f"/api/ladders/{LADDER}/what-if", b'{"standings": [{"player": "\\ud800", "rank": 1}, {"player": "b", "rank": 2}]}',
     400, "not_json"),
    (f"/api/ladders/{LADDER}/what-if", {"standings": [{"player": "a", "rank": 1}, {"player": "a", "rank": 2}]},
     400, "duplicate_player"),
    (f"/api/ladders/{LADDER}/what-if", {"standings": standings(["a"])}, 400, "no_outcome"),
    (f"/api/ladders/{LADDER}/what-if", {**GOOD, "weight": "heavy"}, 400, None),
    (f"/api/ladders/{LADDER}/what-if", {**GOOD, "weight": 1e308}, 400, "bad_weight"),
    (f"/api/ladders/{LADDER}/what-if", {**GOOD, "weight": -1}, 400, "bad_weight"),
    (f"/api/ladders/{LADDER}/what-if", {**GOOD, "occurred_at": 1e300}, 400, None),
    (f"/api/ladders/{LADDER}/what-if", {"standings": [{"player": "a", "rank": 1e400}, {"player": "b", "rank": 2}]},
     400, None),
    (f"/api/ladders/{LADDER}/what-if", {"standings": "a,b"}, 400, None),
    (f"/api/ladders/{LADDER}/what-if", {"standings": [{"player": "", "rank": 1}, {"player": "b", "rank": 2}]},
     400, None),
    (f"/api/ladders/{LADDER}/what-if", {**GOOD, "ladder": "other"}, 400, "ladder_mismatch"),
    (f"/api/ladders/{LADDER}/what-if", {**GOOD, "explain_for": ["ghost"]}, 400, "unknown_player"),
    (f"/api/ladders/{LADDER}/what-if", {**GOOD, "explain_for": [1]}, 400, "bad_explain_for"),
    (f"/api/ladders/{LADDER}/what-if", {**GOOD, "explain_for": PLAYERS[:6]}, 400, "bad_explain_for"),
    (f"/api/ladders/{LADDER}/what-if", {"standings": standings([f"x{i}" for i in range(50)])}, 400, "round_too_large"),
])
def test_bad_input_is_a_4xx_with_a_code(redis_url: str, path: str, body: Any, status: int, code: str) -> None:
    seed_states(redis_url)
    got_status, got = post(redis_url, path, body, max_round_size=40)
    if code is None:  # the input contract's own reason (what the stream would dead-letter it with)
        assert got_status == status and got["error"] in ROUND_REASONS, got
    else:
        assert (got_status, got["error"]) == (status, code), got
    assert got["message"]


def test_a_body_too_large_is_413(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seed_states(redis_url)
    monkeypatch.setattr(whatif_api, "MAX_WHAT_IF_BYTES", 1000)
    status, got = post(redis_url, f"/api/ladders/{LADDER}/what-if", {"standings": standings([f"x{i}" for i in range(200)])})
    assert (status, got["error"]) == (413, "request_too_large")
    # a body past the API's 64 KiB limit of other bodies, under the what-if's own, is read
    monkeypatch.setattr(whatif_api, "MAX_WHAT_IF_BYTES", 16 * 1024 * 1024)
    big = {"standings": standings([f"player-number-{i:06d}" for i in range(3000)])}
    assert len(json.dumps(big)) > 64 * 1024
    status, got = post(redis_url, f"/api/ladders/{LADDER}/what-if", big)
    assert status == 200 and got["field_size"] == 3000


def test_other_routes_keep_their_body_limit(redis_url: str) -> None:
    seed_states(redis_url)
    status, got = post(redis_url, f"/api/ladders/{LADDER}/predict", {"players": ["a" * 70_000, "b"]})
    assert (status, got["error"]) == (413, "request_too_large")


def get(url: str, path: str) -> tuple[int, Any]:
    async def go(client: TestClient) -> tuple[int, Any]:
        resp = await client.get(path)
        return resp.status, await resp.json()
    return with_client(url, go)  # type: ignore[no-any-return]


def test_explain_answers_from_what_is_stored(redis_url: str) -> None:
    from readside_data import LADDER as RS, seed
    seeded = seed(redis_url)
    player = "star*player"
    status, got = get(redis_url, f"/api/ladders/{RS}/players/star%2Aplayer/changes/r2/explain")
    assert status == 200, got
    assert got["change"]["player"] == player and got["change"]["round_id"] == "r2" and got["kind"] == "round"
    assert got["expected"]["actual_rank"] == got["change"]["rank"]
    assert 1 <= got["expected"]["rank"] <= seeded.field_sizes["r2"]
    assert got["display"]["rule"] == "mu - 2*sigma"
    assert got["reconstructed"]["display_rating"] == pytest.approx(got["change"]["display_rating"])
    assert any("shown rating" in line for line in got["text"])


@pytest.mark.parametrize("path, status, code", [
    ("/api/ladders/nope/players/p01/changes/r1/explain", 404, "unknown_ladder"),
    ("/api/ladders/blitz/players/ghost/changes/r1/explain", 404, "unknown_player"),
    ("/api/ladders/blitz/players/p01/changes/r99/explain", 404, "unknown_change"),
    ("/api/ladders/blitz/players/%F0%9F%90%A3/changes/r1/explain", 404, "unknown_player"),
    (f"/api/ladders/blitz/players/{'a' * 300}/changes/r1/explain", 400, "bad_player"),
    (f"/api/ladders/blitz/players/p01/changes/{'r' * 300}/explain", 400, "bad_round"),
    ("/api/ladders/blitz/players/%FF/changes/r1/explain", 400, "bad_player"),
])
def test_explain_bad_input_is_a_4xx_with_a_code(redis_url: str, path: str, status: int, code: str) -> None:
    from readside_data import seed
    seed(redis_url)
    got_status, got = get(redis_url, path)
    assert (got_status, got["error"]) == (status, code), got


def test_every_rating_answer_carries_interval_and_status(redis_url: str) -> None:
    """Leaderboard rows and the player page carry the interval (the display entry's interval_z),
    provisional status and eligibility; ineligible players stay queryable."""
    from readside_data import LADDER as RS, seed
    seeded = seed(redis_url)
    ladders = json.dumps({RS: {"model": "mmr", "display": {"interval_z": 1.0, "provisional_rounds": 5,
                                                           "min_rounds": 4, "active_days": 36500}}})

    async def go(client: TestClient) -> tuple[Any, Any, Any, Any]:
        board = await (await client.get(f"/api/ladders/{RS}/leaderboard?limit=200")).json()
        best = board["rows"][0]["player"]
        page = await (await client.get(f"/api/ladders/{RS}/players/{quote(best, safe='')}")).json()
        ranks = await (await client.get(f"/api/ladders/{RS}/players/{quote(best, safe='')}/ranks")).json()
        round_id = page["history"][-1]["round_id"]
        round_ = await (await client.get(f"/api/ladders/{RS}/rounds/{quote(round_id, safe='')}")).json()
        return board, page, ranks, round_
    board, page, ranks, round_ = with_client(redis_url, go, ladders=ladders)
    assert len(board["rows"]) == len(seeded.display)
    # each stored change (history, a round's results) and each timeline point: mu_after +/- z*sigma_after
    changes = page["history"] + round_["results"]
    assert page["history"] and len(ranks["points"]) == len(page["history"]) and round_["results"]
    for change in changes:
        assert change["interval_z"] == 1.0
        assert change["interval"] == pytest.approx([change["mu_after"] - change["sigma_after"],
                                                   change["mu_after"] + change["sigma_after"]])
    for point, change in zip(ranks["points"], page["history"]):
        assert (point["mu"], point["sigma"]) == (change["mu_after"], change["sigma_after"])
        assert point["interval"] == change["interval"] and point["interval_z"] == 1.0
    for row in board["rows"] + [page]:
        assert row["interval_z"] == 1.0
        assert row["interval"] == pytest.approx([row["mu"] - row["sigma_now"], row["mu"] + row["sigma_now"]])
        assert row["sigma_now"] >= row["sigma"]  # grown by the drift since the last round, never less
        assert row["provisional"] is (row["rounds"] < 5)
        assert row["eligible"] is (row["rounds"] >= 4)
        assert row["ineligible_reasons"] == ([] if row["rounds"] >= 4 else ["fewer than 4 rounds"])
    assert {r["eligible"] for r in board["rows"]} == {True, False}  # both kinds, all queryable


def test_predictions_carry_the_interval(redis_url: str) -> None:
    seed_states(redis_url)
    ladders = json.dumps({"*": {"model": "mmr", "display": {"interval_z": 3.0}}})
    for body in ({"players": [PLAYERS[0], "fresh"]}, {"teams": [[PLAYERS[0]], [PLAYERS[1], "fresh"]]}):
        status, got = post(redis_url, f"/api/ladders/{LADDER}/predict", body, ladders=ladders)
        assert status == 200, got
        players = got["players"] if "players" in got else [p for team in got["teams"] for p in team["players"]]
        for p in players:
            assert p["interval"] == pytest.approx([p["mu"] - 3 * p["sigma"], p["mu"] + 3 * p["sigma"]])


def test_eligible_leaderboard_keeps_the_rules_order_and_positions(redis_url: str) -> None:
    from readside_data import LADDER as RS, seed
    seeded = seed(redis_url)
    ladders = json.dumps({RS: {"model": "mmr", "display": {"min_rounds": 4}}})

    async def go(client: TestClient) -> tuple[Any, Any, Any]:
        full = await (await client.get(f"/api/ladders/{RS}/leaderboard?limit=200")).json()
        eligible = await (await client.get(f"/api/ladders/{RS}/leaderboard?eligible=true&limit=200")).json()
        second = await (await client.get(f"/api/ladders/{RS}/leaderboard?eligible=1&offset=2&limit=3")).json()
        return full, eligible, second
    full, eligible, second = with_client(redis_url, go, ladders=ladders)
    admitted = [r for r in full["rows"] if r["rounds"] >= 4]
    assert 0 < len(admitted) < len(full["rows"]) == len(seeded.display)
    assert [r["player"] for r in eligible["rows"]] == [r["player"] for r in admitted]
    assert [r["position"] for r in eligible["rows"]] == list(range(1, len(admitted) + 1))
    assert [r["leaderboard_position"] for r in eligible["rows"]] == [r["position"] for r in admitted]
    assert eligible["total"] == len(admitted) and eligible["leaderboard_size"] == len(full["rows"])
    assert [r["player"] for r in second["rows"]] == [r["player"] for r in admitted[2:5]]
    status, got = get(redis_url, f"/api/ladders/{RS}/leaderboard?eligible=true&search=p")
    assert (status, got["error"]) == (400, "bad_request")


def test_players_with_a_round_in_flight_are_named(redis_url: str) -> None:
    import redis as sync_redis
    from stream.store import keys as store_keys
    seed_states(redis_url)
    client = sync_redis.Redis.from_url(redis_url)
    client.hset(store_keys.player(LADDER, PLAYERS[1]), "queued_seq", 7)  # a round of his is rated, not applied
    client.close()
    _, got = post(redis_url, f"/api/ladders/{LADDER}/what-if", {"standings": standings(PLAYERS[:4])})
    assert got["in_flight"] == [PLAYERS[1]]


def _entries_body(entries: list[tuple[str, list[str] | None]], order_ranks: list[int]) -> list[dict[str, Any]]:
    """Standings of (name, team members or None for an individual) entries at the given ranks."""
    return [{"team": name, "players": members, "rank": r} if members else {"player": name, "rank": r}
            for (name, members), r in zip(entries, order_ranks)]


def _check_targets(url: str, ladders: str, when: float, entries: list[tuple[str, list[str] | None]],
                   player: str) -> dict[str, Any]:
    """Ask the tier targets of ``player`` (entries ranked 1..n in order), then check each one with
    plain what-ifs of the moved standings (only the order of ranks matters, so the others keep
    2 x their place and the entry takes 2R - 1, ahead of the entry now at R, or 2R, tied with it):
    the target reaches the tier, and no worse position does."""
    from stream.engine.display import DisplayConfig, tier_indices
    display = DisplayConfig.from_dict(json.loads(ladders)["*"]["display"])
    body = {"occurred_at": when, "standings": _entries_body(entries, list(range(1, len(entries) + 1))),
            "explain_for": [player]}
    status, got = post(url, f"/api/ladders/{LADDER}/what-if", body, ladders=ladders)
    assert status == 200, got
    (target,) = got["targets"]
    assert target["available"], target
    own = next(k for k, (name, members) in enumerate(entries) if name == player or (members and player in members))
    others = entries[:own] + entries[own + 1:]

    def tier_at(value: int) -> int:
        moved = others + [entries[own]]
        ranks = [2 * (j + 1) for j in range(len(others))] + [value]
        _, at = post(url, f"/api/ladders/{LADDER}/what-if",
                     {"occurred_at": when, "standings": _entries_body(moved, ranks)}, ladders=ladders)
        return int(tier_indices([next(c for c in at["changes"] if c["player"] == player)["tier"] or ""], display)[0])

    names = display.tier_names
    for rank_key, tied_key, name in (("rank_for_next", "tied_for_next", target["next_tier"]),
                                     ("rank_to_keep", "tied_to_keep", target["tier"] or None)):
        if name is None:
            continue
        wanted = names.index(name)
        values = list(range(1, 2 * len(entries)))  # every position: ahead of / tied with each other entry, last
        if target[rank_key] is None:
            assert all(tier_at(v) < wanted for v in values)
            continue
        value = 2 * target[rank_key] - (0 if target[tied_key] else 1)
        assert tier_at(value) >= wanted
        assert all(tier_at(v) < wanted for v in values if v > value)
    return target


def test_tier_targets_of_a_rating_only_model_scan_every_position(redis_url: str) -> None:
    """A Glicko ladder (sigma after a round depends on the outcome: no proven monotonicity): the
    targets come from evaluating every position, and are the worst ranks that reach the tier."""
    ladders = json.dumps({"*": {"model": "glicko", "display": {"k": 0.2, "tiers": [["Low", None], ["Mid", 1500.0],
                                                                                     ["High", 1700.0]]}}})
    from stream.store import keys
    redis.Redis.from_url(redis_url).sadd(keys.ladders(), LADDER)
    entries = [(f"g{i}", None) for i in range(8)]
    target = _check_targets(redis_url, ladders, START, entries, "g5")
    assert target["search"] == "scan" and target["rank_for_next"] is not None


def test_tier_targets_of_a_team_round_move_the_team(redis_url: str) -> None:
    """Elo-MMR for teams: the player's team moves as a whole; the target ranks are team ranks."""
    seed_states(redis_url)
    ladders = json.dumps({"*": {"model": "mmr", "display": {"k": 0.5, "tiers": [["Bronze", None], ["Gold", 1400.0],
                                                                                  ["Platinum", 1560.0]]}}})
    entries = [(f"t{k}", PLAYERS[2 * k:2 * k + 2]) for k in range(5)] + [(PLAYERS[10], None)]
    target = _check_targets(redis_url, ladders, START + 7 * DAY, entries, PLAYERS[4])
    assert target["search"] == "bisect" and target["tier"] == "Gold"
