"""Redis side of seasons: league thresholds from target shares, kept with the time each set took
effect, a season's archived final standings (keys: ``keys.league_shares``,
``keys.season_archive``, ``keys.season_standings``; docs/contracts.md), and the seasons started
with ``stream season start``: the schedule of record the workers read (``keys.season_schedule``).

The maths (where the thresholds fall, a player's league) is the engine's
(``stream.engine.league_shares``); ``stream.pipeline.seasons`` joins the two.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, cast

from stream.store import keys, player_hash
from stream.store.client import AsyncRedis, as_text
from stream.store.scripts import source

ARCHIVE_CHUNK = 5_000
"""Players per pipeline round trip when an archive is written or read."""


async def leaderboard_size(r: AsyncRedis, ladder: str) -> int:
    """Players on the ladder's leaderboard."""
    return int(await r.zcard(keys.leaderboard(ladder)))


async def scores_at_ranks(r: AsyncRedis, ladder: str, ranks: Sequence[int]) -> list[float]:
    """The leaderboard score (display rating) of the player at each ascending rank (0: the lowest);
    NaN past the end. One round trip."""
    pipe = r.pipeline(transaction=False)
    for rank in ranks:
        pipe.zrange(keys.leaderboard(ladder), int(rank), int(rank), withscores=True)
    replies = await pipe.execute()
    return [float(reply[0][1]) if reply else math.nan for reply in replies]


async def counts_between(r: AsyncRedis, ladder: str, thresholds: Sequence[float]) -> list[int]:
    """Leaderboard players whose score is in ``[thresholds[i], thresholds[i + 1])`` (the last: up
    to +inf), per i. One round trip."""
    pipe = r.pipeline(transaction=False)
    bounds = [*thresholds, math.inf]
    for low, high in zip(bounds[:-1], bounds[1:]):
        pipe.zcount(keys.leaderboard(ladder), _score(low), f"({_score(high)}" if math.isfinite(high) else "+inf")
    return [int(n) for n in await pipe.execute()]


def _score(value: float) -> str:
    return "-inf" if value == -math.inf else "+inf" if value == math.inf else repr(float(value))


async def record_shares(r: AsyncRedis, ladder: str, at: float, doc: Mapping[str, Any]) -> None:
    """Keep a threshold set (``doc``, JSON-safe) as taking effect at ``at`` (epoch seconds)."""
    await r.zadd(keys.league_shares(ladder), {json.dumps({"at": at, **doc}, sort_keys=True): at})


async def shares_at(r: AsyncRedis, ladder: str, at: float | None = None) -> dict[str, Any] | None:
    """The threshold set in effect at ``at`` (None: the latest), or None if there is none."""
    key = keys.league_shares(ladder)
    replies = cast("list[bytes]", await r.zrevrangebyscore(key, "+inf" if at is None else repr(float(at)), "-inf",
                                                           start=0, num=1))
    return None if not replies else cast("dict[str, Any]", json.loads(as_text(replies[0])))


async def shares_history(r: AsyncRedis, ladder: str) -> list[dict[str, Any]]:
    """Every threshold set, oldest first."""
    members = cast("list[bytes]", await r.zrange(keys.league_shares(ladder), 0, -1))
    return [json.loads(as_text(m)) for m in members]


async def leaderboard_rows(r: AsyncRedis, ladder: str, offset: int, count: int) -> list[tuple[str, float]]:
    """(player, score) of ``count`` leaderboard players from ascending rank ``offset``."""
    rows = cast("list[tuple[bytes, float]]",
                await r.zrange(keys.leaderboard(ladder), offset, offset + count - 1, withscores=True))
    return [(as_text(m), float(s)) for m, s in rows]


async def player_fields(r: AsyncRedis, ladder: str, players: Sequence[str],
                        fields: Sequence[str]) -> list[list[str | None]]:
    """``fields`` of each player's hash as text (None where missing): :func:`player_hash.read`."""
    rows = await player_hash.read(r, ladder, players, player_hash.known(fields))
    return [[None if v is None else as_text(v) for v in row] for row in rows]


async def write_archive(r: AsyncRedis, ladder: str, season: str, standings: Mapping[str, Mapping[str, Any]],
                        scores: Mapping[str, float]) -> None:
    """Replace season ``season``'s archive with ``standings`` (player -> JSON-safe document) and
    their leaderboard ``scores``."""
    board, table = keys.season_archive(ladder, season), keys.season_standings(ladder, season)
    await r.delete(board, table)
    await r.sadd(keys.season_archives(ladder), season)
    players = list(standings)
    for lo in range(0, len(players), ARCHIVE_CHUNK):
        chunk = players[lo:lo + ARCHIVE_CHUNK]
        pipe = r.pipeline(transaction=False)
        pipe.hset(table, mapping={p: json.dumps(standings[p], sort_keys=True) for p in chunk})
        pipe.zadd(board, {p: scores[p] for p in chunk})
        await pipe.execute()


async def archive_page(r: AsyncRedis, ladder: str, season: str, *, offset: int = 0,
                       limit: int = 50) -> tuple[int, list[dict[str, Any]]]:
    """(players archived, one page of season ``season``'s final standings, best first)."""
    board, table = keys.season_archive(ladder, season), keys.season_standings(ladder, season)
    pipe = r.pipeline(transaction=False)
    pipe.zcard(board)
    pipe.zrevrange(board, offset, offset + limit - 1)
    total, members = await pipe.execute()
    names = [as_text(m) for m in members]
    docs = await r.hmget(table, names) if names else []
    return int(total), [{"player": p, **json.loads(as_text(d))} for p, d in zip(names, docs) if d is not None]


async def archived_player(r: AsyncRedis, ladder: str, player: str, seasons: Sequence[str]) -> dict[str, dict[str, Any]]:
    """A player's archived standing in each of ``seasons`` he has one in."""
    pipe = r.pipeline(transaction=False)
    for season in seasons:
        pipe.hget(keys.season_standings(ladder, season), player)
    return {s: json.loads(as_text(d)) for s, d in zip(seasons, await pipe.execute()) if d is not None}


async def histories(r: AsyncRedis, ladder: str, players: Sequence[str]) -> list[list[bytes]]:
    """Each player's whole stored rating history (RatingChange JSON, oldest first). One round trip."""
    pipe = r.pipeline(transaction=False)
    for player in players:
        pipe.lrange(keys.history(ladder, player), 0, -1)
    return [list(entries) for entries in await pipe.execute()]


async def mean_mu(r: AsyncRedis, ladder: str) -> float | None:
    """The mean mu of the ladder's leaderboard players (None: none), the board read in chunks."""
    total, count, offset = 0.0, 0, 0
    while rows := await leaderboard_rows(r, ladder, offset, ARCHIVE_CHUNK):
        offset += len(rows)
        values = [float(mu) for (mu,) in await player_fields(r, ladder, [p for p, _ in rows], (player_hash.MU,)) if mu is not None]
        total, count = total + sum(values), count + len(values)
    return total / count if count else None


async def forget_player(r: AsyncRedis, ladder: str, player: str) -> int:
    """Remove a player from every archived season of the ladder (``stream erase``); returns how many held him."""
    seasons = [as_text(s) for s in cast("set[bytes]", await r.smembers(keys.season_archives(ladder)))]
    pipe = r.pipeline(transaction=False)
    for season in seasons:
        pipe.zrem(keys.season_archive(ladder, season), player)
        pipe.hdel(keys.season_standings(ladder, season), player)
    replies = await pipe.execute() if seasons else []
    return sum(1 for removed in replies[0::2] if removed)


SCHEDULED = "ok"
""":func:`schedule_season`'s answer when the season was added."""


async def schedule_season(r: AsyncRedis, ladder: str, name: str, start: float,
                          centre: float | None = None) -> tuple[str, str]:
    """Add season ``name`` starting at ``start`` to the ladder's schedule of record, atomically
    refused when a round at or after ``start`` is already registered to rate (the ladder hash's
    ``occurred_max``): ``("ok", "")``, ``("late", newest occurred_at)``, ``("order", the last
    start)`` or ``("name", name)`` (``schedule_season.lua``)."""
    entry = {"name": name, "start": float(start), **({} if centre is None else {"centre": float(centre)})}
    await r.sadd(keys.season_schedules(), ladder)
    script = r.register_script(source("schedule_season"))
    outcome, detail = await script(keys=[keys.ladder(ladder), keys.season_schedule(ladder)],
                                   args=[json.dumps(entry), repr(float(start)), name])
    return as_text(outcome), as_text(detail)


async def scheduled_seasons(r: AsyncRedis) -> dict[str, list[dict[str, Any]]]:
    """Every ladder's seasons of record (``schedule_season``), ladder -> entries in start order.
    Two round trips: the ladders, then their schedules."""
    return (await schedule_of_record(r))[0]


async def schedule_of_record(r: AsyncRedis) -> tuple[dict[str, list[dict[str, Any]]], dict[str, int]]:
    """Every ladder's seasons of record (as :func:`scheduled_seasons`) and schedule version (the
    ladder hash's ``schedule_version``, what register_round.lua compares with the version a worker
    holds). Each version is read before its schedule (one pipeline, in order), so a season added
    in between makes the version older than the entries, never newer: a worker holding it is at
    worst refused once more. Two round trips."""
    ladders = sorted(as_text(m) for m in cast("set[bytes]", await r.smembers(keys.season_schedules())))
    if not ladders:
        return {}, {}
    pipe = r.pipeline(transaction=False)
    for ladder in ladders:
        pipe.hget(keys.ladder(ladder), "schedule_version")
    for ladder in ladders:
        pipe.lrange(keys.season_schedule(ladder), 0, -1)
    replies = await pipe.execute()
    versions = {ladder: int(raw or 0) for ladder, raw in zip(ladders, replies[:len(ladders)])}
    entries = {ladder: [json.loads(as_text(text)) for text in texts]
               for ladder, texts in zip(ladders, replies[len(ladders):]) if texts}
    return entries, versions


async def restore_schedule(r: AsyncRedis, ladder: str, entries: Sequence[Mapping[str, Any]]) -> None:
    """Set the ladder's seasons of record to ``entries`` (``stream import``). The schedule version
    and its starts come back with the ladder's hash, as exported (an import is an exact restore
    into an empty ladder): a worker holding an older version registers nothing of the ladder at
    or after an unread start before it has read the schedule again (register_round.lua)."""
    pipe = r.pipeline(transaction=True)
    pipe.sadd(keys.season_schedules(), ladder)
    pipe.delete(keys.season_schedule(ladder))
    if entries:
        pipe.rpush(keys.season_schedule(ladder), *[json.dumps(dict(e)) for e in entries])
    await pipe.execute()
