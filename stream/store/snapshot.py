"""A ladder's stored state as records, and back (``stream export`` / ``stream import``).

A snapshot is a sequence of :class:`Record` ``(kind, id, fields)``, every value text, which together
rebuild each of the ladder's keys exactly; the kinds and their fields: docs/history.md, Snapshots.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from stream.store import keys, player_hash, seasons
from stream.store.bulk import BulkWriter, ladder_info, members
from stream.store.client import as_bytes, as_text, read_each
from stream.store.store import Store

VERSION = "1"
BINARY_FIELDS = frozenset({player_hash.STATE})
"""Player fields that are bytes, not text: base64 in a snapshot."""
KINDS = ("snapshot", "ladder", "player", "history", "round", "results", "fanout", "season", "season_lb", "shares",
         "schedule")
HASHES = {"round": keys.round_record, "results": keys.round_results, "fanout": keys.round_perf,
          "season": keys.season_standings}
"""The kinds of record that are one hash named by the ladder and the record's id (a round's, a season's)."""


class SnapshotError(ValueError):
    """A snapshot that cannot be exported or imported as asked (the message says why)."""


@dataclass(frozen=True)
class Record:
    """One record of a snapshot: ``kind`` (docs/history.md, Snapshots), ``id``, text ``fields``."""

    kind: str
    id: str
    fields: dict[str, str]


def _text_fields(raw: dict[bytes | str, bytes | str], binary: frozenset[str] = frozenset()) -> dict[str, str]:
    return {name: base64.b64encode(as_bytes(v)).decode() if name in binary else as_text(v)
            for name, v in ((as_text(k), v) for k, v in raw.items())}


async def export_ladder(store: Store, ladder: str, *, now: float) -> AsyncIterator[Record]:
    """The records of ``ladder``; :class:`SnapshotError` for an unknown ladder or one with rounds in flight."""
    info = await ladder_info(store, ladder)
    if (why := info.refusal(ladder, "export it once it is done")) is not None:
        raise SnapshotError(why)
    if info.in_flight:
        raise SnapshotError(f"ladder {ladder!r} has {info.in_flight} rounds in flight: export it once they are rated")
    client = store.client
    yield Record("snapshot", ladder, {"version": VERSION, "exported_at": repr(now)})
    yield Record("ladder", "", _text_fields(await client.hgetall(keys.ladder(ladder))))

    def player_reads(pipe: Any, player: str) -> None:
        pipe.hgetall(keys.player(ladder, player))
        pipe.lrange(keys.history(ladder, player), 0, -1)

    async for player, (state, history) in read_each(client, await members(store, keys.leaderboard(ladder)),
                                                    player_reads):
        yield Record("player", player, _text_fields(state, BINARY_FIELDS))
        if history:
            yield Record("history", player, {str(j): as_text(e) for j, e in enumerate(history)})

    def round_reads(pipe: Any, round_id: str) -> None:
        for kind in ("round", "results", "fanout"):
            pipe.hgetall(HASHES[kind](ladder, round_id))

    async for round_id, replies in read_each(client, await members(store, keys.rounds(ladder)), round_reads):
        for kind, raw in zip(("round", "results", "fanout"), replies):
            if raw or kind == "round":
                yield Record(kind, round_id, _text_fields(raw))
    for season in sorted(as_text(s) for s in await client.smembers(keys.season_archives(ladder))):
        yield Record("season", season, _text_fields(await client.hgetall(keys.season_standings(ladder, season))))
        board = cast("list[tuple[bytes, float]]",
                     await client.zrange(keys.season_archive(ladder, season), 0, -1, withscores=True))
        yield Record("season_lb", season, {as_text(p): repr(float(score)) for p, score in board})
    lists = (("shares", await client.zrange(keys.league_shares(ladder), 0, -1)),
             ("schedule", await client.lrange(keys.season_schedule(ladder), 0, -1)))
    for kind, entries in cast("tuple[tuple[str, list[bytes]], ...]", lists):
        if entries:
            yield Record(kind, "", {str(j): as_text(e) for j, e in enumerate(entries)})


@dataclass
class _Plan:
    """The writes of a snapshot, checked completely before any is made."""

    ladder: str
    hashes: list[tuple[str, dict[str | bytes, str | bytes]]]
    histories: dict[str, list[bytes]]
    scores: dict[str, str]
    seqs: dict[str, int]
    boards: dict[str, dict[str, str]] = field(default_factory=dict)
    """Season S -> its archived board (player -> score)."""
    shares: dict[str, float] = field(default_factory=dict)
    """League threshold set (JSON) -> when it took effect."""
    schedule: list[bytes] = field(default_factory=list)
    """The seasons of record, in order."""


def _plan(records: Iterable[Record]) -> _Plan:
    it = iter(records)
    head = next(it, None)
    if head is None or head.kind != "snapshot":
        raise SnapshotError("not a snapshot: the first record must be of kind 'snapshot'")
    if head.fields.get("version") != VERSION:
        raise SnapshotError(f"snapshot version {head.fields.get('version')!r} is not supported (this build reads {VERSION})")
    ladder = head.id
    plan = _Plan(ladder, [], {}, {}, {})
    for number, record in enumerate(it, start=2):
        where = f"record {number} ({record.kind} {record.id!r})"
        fields: dict[str | bytes, str | bytes] = {name: value for name, value in record.fields.items()}
        if record.kind == "ladder":
            plan.hashes.append((keys.ladder(ladder), fields))
        elif record.kind == "player":
            try:
                for name in BINARY_FIELDS & set(record.fields):
                    fields[name] = base64.b64decode(record.fields[name], validate=True)
                plan.scores[record.id] = repr(float(record.fields[player_hash.DISPLAY_RATING]))
            except (ValueError, KeyError) as exc:
                raise SnapshotError(f"{where}: bad or missing field: {exc}") from None
            plan.hashes.append((keys.player(ladder, record.id), fields))
        elif record.kind == "history":
            plan.histories[keys.history(ladder, record.id)] = [e.encode() for e in _numbered(record, where)]
        elif record.kind in HASHES:
            if record.kind == "round":
                try:
                    plan.seqs[record.id] = int(record.fields["seq"])
                except (ValueError, KeyError):
                    raise SnapshotError(f"{where}: no integer seq") from None
            plan.hashes.append((HASHES[record.kind](ladder, record.id), fields))
        elif record.kind == "season_lb":
            try:
                plan.boards[record.id] = {p: repr(float(v)) for p, v in record.fields.items()}
            except ValueError:
                raise SnapshotError(f"{where}: a score is not a number") from None
        elif record.kind in ("shares", "schedule"):
            entries = _numbered(record, where)
            if record.kind == "schedule":
                plan.schedule = [e.encode() for e in entries]
            else:
                try:
                    plan.shares = {e: float(json.loads(e)["at"]) for e in entries}
                except (ValueError, KeyError, TypeError):
                    raise SnapshotError(f"{where}: a threshold set is JSON with its time \"at\"") from None
        else:
            raise SnapshotError(f"record {number}: unknown kind {record.kind!r} (known: {', '.join(KINDS)})")
    return plan


def _numbered(record: Record, where: str) -> list[str]:
    """The values of a record whose fields are ``0, 1, ...`` (a history, a list), in order."""
    if sorted(record.fields, key=lambda k: int(k) if k.isdigit() else -1) != [str(j) for j in range(len(record.fields))]:
        raise SnapshotError(f"{where}: the fields of a {record.kind} are 0, 1, ...")
    return [record.fields[str(j)] for j in range(len(record.fields))]


async def import_ladder(store: Store, records: Iterable[Record]) -> tuple[str, int, int]:
    """Write a snapshot's records into Redis, all checked first; returns (ladder, players, rounds).
    Raises :class:`SnapshotError` for a malformed snapshot or a ladder that already has state."""
    plan = _plan(records)
    ladder = plan.ladder
    info = await ladder_info(store, ladder)
    if info.fields or info.rounds or await store.client.zcard(keys.leaderboard(ladder)):
        raise SnapshotError(f"ladder {ladder!r} already has state in Redis: import restores a ladder into an empty one")
    writer = BulkWriter(store)
    await writer.command("SADD", keys.ladders(), ladder)
    for key, fields in plan.hashes:
        await writer.hset(key, fields)
    for key, entries in plan.histories.items():
        await writer.push_histories({key: entries}, max(len(entries), 1))
    await writer.zadd(keys.leaderboard(ladder), plan.scores)
    await writer.zadd(keys.player_names(ladder), dict.fromkeys(plan.scores, 0))
    await writer.zadd(keys.rounds(ladder), plan.seqs)
    for season, board in plan.boards.items():
        await writer.command("SADD", keys.season_archives(ladder), season)
        await writer.zadd(keys.season_archive(ladder, season), board)
    if plan.shares:
        await writer.zadd(keys.league_shares(ladder), plan.shares)
    await writer.close()
    if plan.schedule:
        await seasons.restore_schedule(store.client, ladder, [json.loads(e) for e in plan.schedule])
    return ladder, len(plan.scores), len(plan.seqs)
