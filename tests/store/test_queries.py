"""Read-only queries (stream/store/queries.py) against a real redis-server with seeded data."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

import pytest
import redis
import redis.asyncio as aioredis

from readside_data import LADDER, Seeded, seed
from stream.store import keys, queries

T = TypeVar("T")


def run(url: str, make: Any, decode: bool = False) -> Any:
    """Run ``make(client)`` on a fresh asyncio client (with or without decode_responses)."""
    async def go() -> Any:
        client = aioredis.Redis.from_url(url, decode_responses=decode)
        try:
            return await make(client)
        finally:
            await client.aclose()
    return asyncio.run(go())


@pytest.fixture()
def seeded(redis_url: str) -> Seeded:
    return seed(redis_url)


def test_glob_escaping() -> None:
    assert queries.escape_glob("a*b?[c]\\") == "a\\*b\\?\\[c\\]\\\\"


def test_ladders_and_summary(redis_url: str, seeded: Seeded) -> None:
    seed(redis_url, ladder="duo", players=["a", "b"], rounds=1)
    assert run(redis_url, queries.ladders) == ["blitz", "duo"]
    summary = run(redis_url, lambda r: queries.ladder_summary(r, LADDER))
    assert summary["seq"] == 5 and summary["rounds_rated"] == 5 and summary["rounds"] == 5
    assert summary["leaderboard_size"] == len(seeded.display) and summary["last_round"] == "r5"
    assert run(redis_url, lambda r: queries.ladder_summary(r, "nope")) is None


@pytest.mark.parametrize("decode", [False, True])
def test_leaderboard_pages(redis_url: str, seeded: Seeded, decode: bool) -> None:
    expected = seeded.ranking()
    first = run(redis_url, lambda r: queries.leaderboard(r, LADDER, offset=0, limit=5), decode)
    second = run(redis_url, lambda r: queries.leaderboard(r, LADDER, offset=5, limit=5), decode)
    assert first.total == len(expected)
    assert [row.player for row in first.rows + second.rows] == expected[:10]
    assert [row.position for row in second.rows] == [6, 7, 8, 9, 10]
    top = first.rows[0]
    assert top.display_rating == pytest.approx(seeded.display[top.player])
    assert top.mu == pytest.approx(seeded.mu[top.player]) and top.sigma == pytest.approx(seeded.sigma[top.player])
    assert top.tier and top.rounds and top.rounds >= 1
    past_end = run(redis_url, lambda r: queries.leaderboard(r, LADDER, offset=100, limit=5))
    assert past_end.rows == [] and past_end.total == len(expected)


@pytest.mark.parametrize("index", [True, False], ids=["name-index", "scan"])
def test_search_by_prefix_escapes_glob(redis_url: str, seeded: Seeded, index: bool) -> None:
    if not index:  # a ladder rated before the name index existed: the bounded scan answers the same
        redis.Redis.from_url(redis_url).delete(keys.player_names(LADDER))
    page = run(redis_url, lambda r: queries.search_leaderboard(r, LADDER, "p0"))
    ids = [row.player for row in page.rows]
    assert sorted(ids) == sorted(p for p in seeded.display if p.startswith("p0"))
    ranking = seeded.ranking()
    assert [row.position for row in page.rows] == [ranking.index(p) + 1 for p in ids]
    assert [row.position for row in page.rows] == sorted(row.position for row in page.rows)
    # glob metacharacters match literally: "*" is not a wildcard, "x[1]" is found as itself
    star = run(redis_url, lambda r: queries.search_leaderboard(r, LADDER, "*"))
    assert [row.player for row in star.rows] == []
    literal = run(redis_url, lambda r: queries.search_leaderboard(r, LADDER, "x[1"))
    assert [row.player for row in literal.rows] == ["x[1]"]
    starred = run(redis_url, lambda r: queries.search_leaderboard(r, LADDER, "star*"))
    assert [row.player for row in starred.rows] == ["star*player"]


def test_player_view(redis_url: str, seeded: Seeded) -> None:
    name = seeded.ranking()[2]
    view = run(redis_url, lambda r: queries.player(r, LADDER, name))
    assert view.position == 3 and view.mu == pytest.approx(seeded.mu[name])
    assert view.history and all(h["player"] == name for h in view.history)
    assert view.history[-1]["mu_after"] == pytest.approx(view.mu)
    assert [h["occurred_at"] for h in view.history] == sorted(h["occurred_at"] for h in view.history)
    short = run(redis_url, lambda r: queries.player(r, LADDER, name, history_limit=1))
    assert short.history == view.history[-1:]
    assert run(redis_url, lambda r: queries.player(r, LADDER, "ghost")) is None
    assert run(redis_url, lambda r: queries.player(r, "nope", name)) is None


def test_round_view_and_recent_rounds(redis_url: str, seeded: Seeded) -> None:
    view = run(redis_url, lambda r: queries.round_view(r, LADDER, "r2"))
    assert view.record["status"] == "rated" and view.record["field_size"] == seeded.field_sizes["r2"]
    assert [c["rank"] for c in view.results] == list(range(1, seeded.field_sizes["r2"] + 1))
    assert view.complete
    assert run(redis_url, lambda r: queries.round_view(r, LADDER, "r99")) is None
    recent = run(redis_url, lambda r: queries.recent_rounds(r, LADDER, limit=3))
    assert [s["round_id"] for s in recent] == ["r5", "r4", "r3"] and recent[0]["seq"] == 5


def test_round_view_caps_huge_rounds(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seed(redis_url, rounds=1)
    monkeypatch.setattr(queries, "MAX_ROUND_RESULTS", 4)
    view = run(redis_url, lambda r: queries.round_view(r, LADDER, "r1"))
    assert not view.complete and len(view.results) == 4


def test_queries_never_write(redis_url: str, seeded: Seeded) -> None:
    client = redis.Redis.from_url(redis_url)
    before = {k: client.dump(k) for k in client.keys("*")}

    async def everything(r: aioredis.Redis) -> None:
        await queries.ladders(r)
        await queries.ladder_summary(r, LADDER)
        await queries.leaderboard(r, LADDER)
        await queries.search_leaderboard(r, LADDER, "p")
        await queries.player(r, LADDER, "p01")
        await queries.round_view(r, LADDER, "r1")
        await queries.recent_rounds(r, LADDER)
        await queries.lobby_state(r, LADDER, ["p01", "ghost"])

    run(redis_url, everything)
    assert {k: client.dump(k) for k in client.keys("*")} == before
    assert client.exists(keys.player(LADDER, "ghost")) == 0
    client.close()


def _command_calls(client: redis.Redis, command: str) -> int:
    stats = client.info("commandstats").get(f"cmdstat_{command}")
    return int(stats["calls"]) if stats else 0


def test_search_that_matches_nothing_reads_no_leaderboard(redis_url: str) -> None:
    """50,000 players: a prefix matching nothing is one ZRANGEBYLEX on the name index, no scan; a
    ladder without the index scans at most MAX_SEARCH_SCAN entries and says the answer is partial."""
    client = redis.Redis.from_url(redis_url)
    players = {f"player-{i:06d}": float(i) for i in range(50_000)}
    client.sadd(keys.ladders(), LADDER)
    client.zadd(keys.leaderboard(LADDER), players)
    client.zadd(keys.player_names(LADDER), {p: 0 for p in players})
    client.config_resetstat()
    page = run(redis_url, lambda r: queries.search_leaderboard(r, LADDER, "nobody"))
    assert page.rows == [] and page.total == 0 and not page.truncated
    assert _command_calls(client, "zscan") == 0 and _command_calls(client, "zrangebylex") == 1
    found = run(redis_url, lambda r: queries.search_leaderboard(r, LADDER, "player-04999", limit=3))
    assert [row.player for row in found.rows] == ["player-049999", "player-049998", "player-049997"]
    assert found.total == 10 and found.rows[0].position == 1

    client.delete(keys.player_names(LADDER))
    client.config_resetstat()
    partial = run(redis_url, lambda r: queries.search_leaderboard(r, LADDER, "nobody"))
    assert partial.rows == [] and partial.truncated
    assert _command_calls(client, "zscan") <= queries.MAX_SEARCH_SCAN // queries.SCAN_COUNT
    client.close()


def test_ladders_page_reads_only_its_page(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    names = [f"l{i:03d}" for i in range(120)]
    client.sadd(keys.ladders(), *names)
    client.config_resetstat()
    total, page = run(redis_url, lambda r: queries.ladders_page(r, offset=100, limit=50))
    assert total == 120 and [s["ladder"] for s in page] == names[100:]
    assert _command_calls(client, "smembers") == 1 and _command_calls(client, "hmget") == 20
    client.close()


def test_rating_distribution_counts_every_player_once(redis_url: str, seeded: Seeded) -> None:
    dist = run(redis_url, lambda r: queries.rating_distribution(r, LADDER, 5))
    shown = sorted(seeded.display.values())
    assert (dist["total"], dist["low"], dist["high"]) == (len(shown), shown[0], shown[-1])
    width = (shown[-1] - shown[0]) / 5
    expected = [sum(shown[0] + i * width <= x < shown[0] + (i + 1) * width for x in shown) for i in range(5)]
    expected[-1] += sum(x == shown[-1] for x in shown)  # the last bin is closed
    assert dist["counts"] == expected and sum(dist["counts"]) == len(shown)
    empty = run(redis_url, lambda r: queries.rating_distribution(r, "nope", 3))
    assert (empty["total"], empty["counts"]) == (0, [0, 0, 0])


def test_ladder_version(redis_url: str, seeded: Seeded) -> None:
    """The fields a rated round moves; a ladder only in the ladder set still exists; None for unknown."""
    version = run(redis_url, lambda r: queries.ladder_version(r, LADDER))
    assert version == ("5", "5", repr(1_700_000_000.0 + 5 * 86_400.0))
    sync = redis.Redis.from_url(redis_url)
    sync.hincrby(keys.ladder(LADDER), "rounds_rated", 1)
    sync.sadd(keys.ladders(), "empty")
    sync.close()
    assert run(redis_url, lambda r: queries.ladder_version(r, LADDER)) == ("5", "6", version[2])
    assert run(redis_url, lambda r: queries.ladder_version(r, "empty")) == ("", "", "")
    assert run(redis_url, lambda r: queries.ladder_version(r, "nope")) is None
