"""Read-only queries over the service's Redis state, for the read API, dashboard and CLI.

Only reads, only the keys of docs/contracts.md. User input (ids, search prefixes) is only used inside
key NAMES (opaque bytes to Redis) and in ZSCAN's MATCH after :func:`escape_glob`, never as a command
name. Works with or without ``decode_responses``. Each function returns a JSON-ready dict, or a dataclass
with ``to_dict()`` where the CLI reads its fields, or None when the ladder / player / round does not exist.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from stream.store import keys, player_hash
from stream.store.client import AsyncRedis, as_text, pipelined, read_each

LADDER_FIELDS = ("seq", "rounds_rated", "players", "last_round", "updated_at")

SCAN_COUNT = 1000
"""ZSCAN/HSCAN batch hint: large enough for few round trips, small enough not to stall Redis."""
MAX_SEARCH_MATCHES = 1000
"""A prefix search stops collecting after this many matching players."""
MAX_SEARCH_SCAN = 20_000
"""Without a complete name index (data written before it existed), a search scans at most this many
leaderboard entries and says so (``truncated``)."""
MAX_ROUND_RESULTS = 10_000
"""A round page reads at most this many players' results (larger rounds are marked incomplete)."""
GLOB_SPECIALS = "\\*?[]^-"


def _text(raw: Any) -> str | None:
    return None if raw is None else as_text(raw)


def _float(raw: Any) -> float | None:
    text = _text(raw)
    return None if text is None or text == "" else float(text)


def _int(raw: Any) -> int | None:
    text = _text(raw)
    return None if text is None or text == "" else int(float(text))


ROUND_FIELDS: dict[str, Callable[[Any], Any]] = {
    "round_id": _text, "seq": _int, "status": _text, "field_size": _int, "occurred_at": _float,
    "received_at": _float, "rated_at": _float, "content_hash": _text, "pending": _int,
    "corrections": lambda raw: json.loads(raw) if raw else [], "voided_by": _text, "amended_by": _text,
    "inserted_by": _text}
"""The round record fields a round page shows, each with its reader; the last: a corrected round's marks
(stream/pipeline/corrections.py), its trail (JSON: id, kind, at, reason of each) and the correction that
voided, amended or inserted it."""


class View:
    """A query's answer (a dataclass of JSON-ready values: numbers, strings, lists of dicts)."""

    def to_dict(self) -> dict[str, Any]:
        """The fields as a new dict, values as they are (``dataclasses.asdict``'s deep copy was most
        of a leaderboard request's CPU)."""
        return dict(vars(self))


def escape_glob(text: str) -> str:
    """Escape Redis glob metacharacters so ``text`` matches only itself in SCAN MATCH."""
    return "".join("\\" + c if c in GLOB_SPECIALS else c for c in text)


@dataclass
class LeaderboardRow(View):
    position: int  # 1-based place on the leaderboard (by display rating)
    player: str
    display_rating: float
    mu: float | None
    sigma: float | None
    rounds: int | None
    tier: str | None
    last_time: float | None = None


@dataclass
class LeaderboardPage(View):
    ladder: str
    total: int  # players on the leaderboard (or matches, for a search)
    offset: int
    limit: int
    rows: list[LeaderboardRow]
    search: str | None = None
    truncated: bool = False  # a search stopped at MAX_SEARCH_MATCHES

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "rows": [r.to_dict() for r in self.rows]}


@dataclass
class PlayerView(View):
    ladder: str
    player: str
    mu: float
    sigma: float
    rounds: int
    last_round: str | None
    last_time: float | None
    display_rating: float | None
    tier: str | None
    position: int | None
    leaderboard_size: int
    history: list[dict[str, Any]] = field(default_factory=list)  # RatingChange dicts, oldest first


@dataclass
class RoundView(View):
    ladder: str
    round_id: str
    record: dict[str, Any]
    results: list[dict[str, Any]]  # RatingChange dicts ordered by rank, then player
    complete: bool  # False when the round has more results than MAX_ROUND_RESULTS


async def ladders(r: AsyncRedis) -> list[str]:
    """Every ladder name, sorted."""
    return sorted(_text(m) or "" for m in await r.smembers(keys.ladders()))


#: Known ladders an "unknown ladder" message lists (the first, by name).
KNOWN_LADDERS_SHOWN = 20


def unknown_ladder_message(ladder: str, known: list[str]) -> str:
    """``unknown ladder 'x'``, the closest known names ("did you mean"), and the known ones (the
    first :data:`KNOWN_LADDERS_SHOWN`): what the CLI and the read API answer for a ladder that has none."""
    close = difflib.get_close_matches(ladder, known, n=3, cutoff=0.6)
    listed = ", ".join(known[:KNOWN_LADDERS_SHOWN]) + (f", ... ({len(known)} in all)" if len(known) > KNOWN_LADDERS_SHOWN
                                                        else "")
    return (f"unknown ladder {ladder!r}" + (f"; did you mean {' or '.join(map(repr, close))}?" if close else "")
            + f"; known ladders: {listed or 'none yet (nothing has been rated)'}")


def unknown_player_message(ladder: str, player_id: str, similar: list[str]) -> str:
    """``unknown player 'x' in ladder 'l'`` and the rated players whose ids look like it."""
    return (f"unknown player {player_id!r} in ladder {ladder!r}"
            + (f"; did you mean {', '.join(map(repr, similar))}?" if similar else ""))


async def ladder_exists(r: AsyncRedis, ladder: str) -> bool:
    return bool(await r.sismember(keys.ladders(), ladder))


def _queue_summary(pipe: Any, ladder: str) -> None:
    pipe.sismember(keys.ladders(), ladder)
    pipe.hmget(keys.ladder(ladder), LADDER_FIELDS)
    pipe.zcard(keys.leaderboard(ladder))
    pipe.zcard(keys.rounds(ladder))


def _summary(ladder: str, replies: list[Any]) -> dict[str, Any] | None:
    """The ladder's counters (its hash's :data:`LADDER_FIELDS`, the leaderboard's and the rounds index's sizes)."""
    exists, (seq, rated, players, last_round, updated_at), lb_size, n_rounds = replies
    if not exists:
        return None
    return {"ladder": ladder, "seq": _int(seq) or 0, "rounds_rated": _int(rated) or 0, "players": _int(players) or 0,
            "last_round": _text(last_round), "updated_at": _float(updated_at), "leaderboard_size": int(lb_size),
            "rounds": int(n_rounds)}


async def ladder_summary(r: AsyncRedis, ladder: str) -> dict[str, Any] | None:
    """Counters of one ladder (ladder hash + leaderboard and rounds sizes)."""
    return _summary(ladder, await pipelined(r, [ladder], _queue_summary))


async def ladders_page(r: AsyncRedis, *, offset: int = 0, limit: int = 100) -> tuple[int, list[dict[str, Any]]]:
    """How many ladders, and a page of them by name with their summaries: two round trips whatever the
    page size (the names, then every summary in one pipeline)."""
    names = await ladders(r)
    page = names[offset:offset + limit]
    summaries = [_summary(name, replies) async for name, replies in read_each(r, page, _queue_summary)]
    return len(names), [s for s in summaries if s is not None]


async def rating_distribution(r: AsyncRedis, ladder: str, bins: int) -> dict[str, Any]:
    """How many players fall in each of ``bins`` equal slices of the display ratings (``counts``, from ``low``
    to ``high``, the lowest and highest display rating, the last bin closed): ZCOUNT per bin in one pipeline
    (O(bins * log N), never the whole leaderboard)."""
    def answer(total: int, low: float | None, high: float | None, counts: list[int]) -> dict[str, Any]:
        return {"ladder": ladder, "total": total, "low": low, "high": high, "counts": counts}

    lb = keys.leaderboard(ladder)
    pipe = r.pipeline(transaction=False)
    pipe.zcard(lb)
    pipe.zrange(lb, 0, 0, withscores=True)
    pipe.zrevrange(lb, 0, 0, withscores=True)
    total, lowest, highest = await pipe.execute()
    if not lowest:
        return answer(0, None, None, [0] * bins)
    low, high = float(lowest[0][1]), float(highest[0][1])
    width = (high - low) / bins
    if width == 0:  # everyone has the same rating
        return answer(int(total), low, high, [int(total)] + [0] * (bins - 1))
    counts = await pipelined(r, range(bins), lambda pipe, i: pipe.zcount(  # [start, end), the last one [start, high]
        lb, low + i * width, high if i == bins - 1 else f"({low + (i + 1) * width!r}"))
    return answer(int(total), low, high, [int(n) for n in counts])


async def ladder_updated_at(r: AsyncRedis, ladder: str) -> float | None:
    """When the ladder last changed (for live updates)."""
    return _float(await r.hget(keys.ladder(ladder), "updated_at"))


async def _rows(r: AsyncRedis, ladder: str, members: list[tuple[str, float, int]]) -> list[LeaderboardRow]:
    """Leaderboard rows for (player, score, position) with each player's hash fields, one round trip."""
    fetched = await player_hash.read(r, ladder, [player for player, _, _ in members], player_hash.ELIGIBILITY)
    return [LeaderboardRow(position=pos, player=player, display_rating=score, mu=_float(mu),
                           sigma=_float(sigma), rounds=_int(rounds), tier=_text(tier), last_time=_float(last_time))
            for (player, score, pos), (mu, sigma, rounds, tier, last_time) in zip(members, fetched)]


async def leaderboard(r: AsyncRedis, ladder: str, *, offset: int = 0, limit: int = 50) -> LeaderboardPage:
    """One page of the leaderboard, best first (ZREVRANGE offset..offset+limit-1)."""
    lb = keys.leaderboard(ladder)
    pipe = r.pipeline(transaction=False)
    pipe.zcard(lb)
    pipe.zrevrange(lb, offset, offset + limit - 1, withscores=True)
    total, page = await pipe.execute()
    members = [(_text(m) or "", float(s), offset + i + 1) for i, (m, s) in enumerate(page)]
    return LeaderboardPage(ladder=ladder, total=int(total), offset=offset, limit=limit,
                           rows=await _rows(r, ladder, members))


def _prefix_range(prefix: str) -> tuple[bytes, bytes]:
    """ZRANGEBYLEX bounds of the members starting with ``prefix`` (0xFF never occurs in UTF-8)."""
    raw = prefix.encode("utf-8")
    return b"[" + raw, b"(" + raw + b"\xff"


async def search_leaderboard(r: AsyncRedis, ladder: str, prefix: str, *, offset: int = 0,
                             limit: int = 50) -> LeaderboardPage:
    """Players whose id starts with ``prefix``, best first, with their leaderboard positions: by
    ZRANGEBYLEX on the name index (O(log N + matches), at most :data:`MAX_SEARCH_MATCHES`), or, where
    the index is not complete (rated before it existed), a scan of :data:`MAX_SEARCH_SCAN` entries."""
    lb, names = keys.leaderboard(ladder), keys.player_names(ladder)
    pipe = r.pipeline(transaction=False)
    pipe.zcard(lb)
    pipe.zcard(names)
    low, high = _prefix_range(prefix)
    pipe.zrangebylex(names, low, high, start=0, num=MAX_SEARCH_MATCHES + 1)
    lb_size, names_size, found = await pipe.execute()
    if names_size >= lb_size:
        players = [_text(m) or "" for m in found]
        truncated = len(players) > MAX_SEARCH_MATCHES
        players = players[:MAX_SEARCH_MATCHES]
        scores = await r.zmscore(lb, players) if players else []
        matches = [(p, float(sc)) for p, sc in zip(players, scores) if sc is not None]
    else:
        matches, truncated = await _scan_search(r, lb, prefix)
    matches.sort(key=lambda ms: (-ms[1], ms[0]))
    page = matches[offset:offset + limit]
    ranks = await pipelined(r, page, lambda pipe, match: pipe.zrevrank(lb, match[0]))
    members = [(player, score, int(rank) + 1) for (player, score), rank in zip(page, ranks) if rank is not None]
    return LeaderboardPage(ladder=ladder, total=len(matches), offset=offset, limit=limit,
                           rows=await _rows(r, ladder, members), search=prefix, truncated=truncated)


#: Players :func:`similar_players` suggests for an id, at most.
MAX_SUGGESTIONS = 5


async def similar_players(r: AsyncRedis, ladder: str, player_id: str, *, limit: int = MAX_SUGGESTIONS) -> list[str]:
    """Rated players of ``ladder`` whose id looks like ``player_id`` (a typo): those sharing its
    longest prefix found in the name index (the id less its last character, then less one more,
    down to half of it), most similar first (difflib's ratio). A few ZRANGEBYLEX lookups."""
    names = keys.player_names(ladder)
    for cut in range(len(player_id) - 1, max(0, len(player_id) // 2 - 1), -1):
        low, high = _prefix_range(player_id[:cut])
        found = [_text(m) or "" for m in await r.zrangebylex(names, low, high, start=0, num=MAX_SEARCH_MATCHES)]
        found = [p for p in found if p != player_id]
        if found:
            return sorted(found, key=lambda p: (-difflib.SequenceMatcher(None, player_id, p).ratio(), p))[:limit]
    return []


async def _scan_search(r: AsyncRedis, lb: str, prefix: str) -> tuple[list[tuple[str, float]], bool]:
    """ZSCAN with an escaped MATCH pattern over at most :data:`MAX_SEARCH_SCAN` entries."""
    matches: list[tuple[str, float]] = []
    cursor, scanned = 0, 0
    while True:
        cursor, batch = await r.zscan(lb, cursor, match=escape_glob(prefix) + "*", count=SCAN_COUNT)
        matches += [(_text(member) or "", float(score)) for member, score in batch]
        scanned += SCAN_COUNT
        if cursor == 0:
            return matches[:MAX_SEARCH_MATCHES], len(matches) > MAX_SEARCH_MATCHES
        if len(matches) >= MAX_SEARCH_MATCHES or scanned >= MAX_SEARCH_SCAN:
            return matches[:MAX_SEARCH_MATCHES], True


async def player(r: AsyncRedis, ladder: str, player_id: str, *, history_limit: int = 100) -> PlayerView | None:
    """A player's current state, leaderboard position and last ``history_limit`` rating changes."""
    pipe = r.pipeline(transaction=False)
    pipe.hmget(keys.player(ladder, player_id), player_hash.VIEW)
    pipe.zrevrank(keys.leaderboard(ladder), player_id)
    pipe.zcard(keys.leaderboard(ladder))
    pipe.lrange(keys.history(ladder, player_id), -history_limit, -1) if history_limit > 0 else pipe.echo("")
    (mu, sigma, rounds, last_round, last_time, display, tier), rank, lb_size, history = await pipe.execute()
    if mu is None:
        return None
    return PlayerView(ladder=ladder, player=player_id, mu=float(mu), sigma=float(sigma),
                      rounds=_int(rounds) or 0, last_round=_text(last_round), last_time=_float(last_time),
                      display_rating=_float(display), tier=_text(tier) or None,
                      position=None if rank is None else int(rank) + 1, leaderboard_size=int(lb_size),
                      history=[json.loads(h) for h in history] if isinstance(history, list) else [])


async def lobby_state(r: AsyncRedis, ladder: str,
                      player_ids: list[str]) -> list[tuple[float, float, float] | None] | None:
    """Each player's (mu, sigma, last_time) (None: unrated; ``last_time`` NaN if absent) and
    whether the ladder exists (None: unknown ladder), one round trip."""
    pipe = r.pipeline(transaction=False)
    pipe.sismember(keys.ladders(), ladder)
    for p in player_ids:
        pipe.hmget(keys.player(ladder, p), [*player_hash.RATING, player_hash.LAST_TIME])
    exists, *rows = await pipe.execute()
    if not exists:
        return None
    return [None if mu is None else (float(mu), float(sigma), math.nan if last is None else float(last))
            for mu, sigma, last in rows]


async def round_view(r: AsyncRedis, ladder: str, round_id: str) -> RoundView | None:
    """A round's record and every player's rating change, ordered by rank."""
    pipe = r.pipeline(transaction=False)
    pipe.hmget(keys.round_record(ladder, round_id), list(ROUND_FIELDS))
    pipe.hlen(keys.round_results(ladder, round_id))
    raw_record, n_results = await pipe.execute()
    if all(v is None for v in raw_record):
        return None
    results_key = keys.round_results(ladder, round_id)
    if n_results <= MAX_ROUND_RESULTS:
        values = list((await r.hgetall(results_key)).values())
    else:
        values = []
        async for _, value in r.hscan_iter(results_key, count=SCAN_COUNT):
            values.append(value)
            if len(values) >= MAX_ROUND_RESULTS:
                break
    results = sorted((json.loads(v) for v in values), key=lambda c: (c.get("rank", 0), str(c.get("player", ""))))
    record = {name: read(value) for (name, read), value in zip(ROUND_FIELDS.items(), raw_record)}
    return RoundView(ladder=ladder, round_id=round_id, record=record, results=results,
                     complete=n_results <= MAX_ROUND_RESULTS)


async def recent_rounds(r: AsyncRedis, ladder: str, *, offset: int = 0, limit: int = 20) -> list[dict[str, Any]]:
    """The ladder's rounds, newest (highest sequence number) first: id, seq, status, size and times."""
    ids = cast("list[tuple[bytes, float]]",
               await r.zrevrange(keys.rounds(ladder), offset, offset + limit - 1, withscores=True))
    records = await pipelined(r, ids, lambda pipe, item: pipe.hmget(
        keys.round_record(ladder, _text(item[0]) or ""), ("status", "field_size", "occurred_at", "rated_at")))
    return [{"round_id": _text(rid) or "", "seq": int(seq), "status": _text(status), "field_size": _int(size),
             "occurred_at": _float(occurred), "rated_at": _float(rated)}
            for (rid, seq), (status, size, occurred, rated) in zip(ids, records)]


# ---- the ladder's version, and pictures over time -----------------------------------------------
async def ladder_version(r: AsyncRedis, ladder: str) -> tuple[str, ...] | None:
    """What changes whenever a round is registered or rated (the ladder hash's ``seq``, ``rounds_rated``,
    ``updated_at``; None: unknown ladder): the read API's cache key, so one command (the ladder set is
    asked only when the hash has none of them)."""
    fields = await r.hmget(keys.ladder(ladder), ("seq", "rounds_rated", "updated_at"))
    if all(f is None for f in fields) and not await ladder_exists(r, ladder):
        return None
    return tuple(_text(f) or "" for f in fields)


async def rounds_over_time(r: AsyncRedis, ladder: str, points: int) -> dict[str, Any]:
    """How the ladder's rounds accumulated: ``points`` rounds spread evenly over its index (by seq),
    each with its place in it (``rounds``: registered up to it, any status) and its times. Three round
    trips whatever the ladder's size (retention keeps the index and the records)."""
    pipe = r.pipeline(transaction=False)
    pipe.zcard(keys.rounds(ladder))
    pipe.hget(keys.ladder(ladder), "rounds_rated")
    total, rated = await pipe.execute()
    total = int(total)
    if total == 0:
        return {"ladder": ladder, "rounds": 0, "rounds_rated": _int(rated) or 0, "points": []}
    where = ([total - 1] if points <= 1 or total <= 1  # evenly spread, the first and last included
             else sorted({round(i * (total - 1) / (points - 1)) for i in range(points)}))
    hits = await pipelined(r, where, lambda pipe, i: pipe.zrange(keys.rounds(ladder), i, i, withscores=True))
    found = [(i, _text(hit[0][0]) or "", int(hit[0][1])) for i, hit in zip(where, hits) if hit]
    records = await pipelined(r, found, lambda pipe, item: pipe.hmget(
        keys.round_record(ladder, item[1]), ("status", "occurred_at", "rated_at")))
    return {"ladder": ladder, "rounds": total, "rounds_rated": _int(rated) or 0, "points": [
        {"rounds": i + 1, "round_id": round_id, "seq": seq, "status": _text(status),
         "occurred_at": _float(occurred), "rated_at": _float(rated_at)}
        for (i, round_id, seq), (status, occurred, rated_at) in zip(found, records)]}


async def rank_timeline(r: AsyncRedis, ladder: str, player_id: str, *,
                        history_limit: int = 100) -> dict[str, Any] | None:
    """A player's tier and leaderboard place after each of the last ``history_limit`` rated rounds, from
    the history entries: two round trips. The place is the one the rating of then holds on today's
    leaderboard (no past one is kept): exact for the newest entry, an estimate for older ones."""
    lb = keys.leaderboard(ladder)
    pipe = r.pipeline(transaction=False)
    pipe.hget(keys.player(ladder, player_id), player_hash.MU)
    pipe.zscore(lb, player_id)
    pipe.zrevrank(lb, player_id)
    pipe.zcard(lb)
    pipe.lrange(keys.history(ladder, player_id), -history_limit, -1) if history_limit > 0 else pipe.echo("")
    mu, score, rank, lb_size, history = await pipe.execute()
    if mu is None:
        return None
    entries = [json.loads(h) for h in history] if isinstance(history, list) else []
    above = await pipelined(r, entries,
                            lambda pipe, entry: pipe.zcount(lb, f"({float(entry['display_rating'])!r}", "+inf"))
    now = None if score is None else float(score)
    points = [{"round_id": e["round_id"], "occurred_at": e["occurred_at"], "display_rating": e["display_rating"],
               "mu": e["mu_after"], "sigma": e["sigma_after"], "tier": e.get("tier") or None, "rank": e["rank"], "field_size": e["field_size"],
               "position": int(n) + 1 - (1 if now is not None and now > float(e["display_rating"]) else 0)}
              for e, n in zip(entries, above)]
    return {"ladder": ladder, "player": player_id, "position": None if rank is None else int(rank) + 1,
            "leaderboard_size": int(lb_size), "points": points}


def round_states(r: Any, rounds: Sequence[tuple[str, str]]) -> list[tuple[bytes | None, bytes | None]]:
    """(content_hash, status) of each (ladder, round id)'s record as stored ((None, None): none
    yet), one round trip of a synchronous client (``stream publish --wait``)."""
    if not rounds:
        return []
    pipe = r.pipeline(transaction=False)
    for ladder, round_id in rounds:
        pipe.hmget(keys.round_record(ladder, round_id), ["content_hash", "status"])
    return [(h, s) for h, s in pipe.execute()]


def rounds_rated(r: Any, ladder: str) -> int:
    """The ladder's count of rated rounds, from a synchronous client (``stream stack --demo``)."""
    return int(r.hget(keys.ladder(ladder), "rounds_rated") or 0)
