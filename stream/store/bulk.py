"""Bulk writes of a ladder's rated history (``stream backfill``, a correction's re-rate, ``stream import``).

The same keys and contents as the stream's scripts write, as chunked pipelines of plain commands:
:class:`BulkWriter` queues the commands (the snapshot import's); :class:`LadderWriter`, one of
them, names every key. Not atomic: the caller checks first that no worker touches the ladder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from stream.store import keys, player_hash
from stream.store.client import AsyncPipeline as Pipeline
from stream.store.client import as_bytes, as_text, pipelined
from stream.store.player_hash import PlayerRows
from stream.store.store import Store, StoredStates

FLUSH_COMMANDS = 2_000
"""Queued commands per pipeline round trip."""
FLUSH_ARGUMENTS = 20_000
"""Queued command arguments per pipeline round trip (a few MB: bounds the client's buffer and Redis' work)."""
ZADD_MEMBERS = 10_000
"""Members per ZADD command (a million-player leaderboard goes out in pieces)."""
ROUND_OUTPUTS = (keys.round_results, keys.round_perf, keys.round_digests, keys.round_emitted)
"""The keys a round's rating leaves beside its record (events, fan-out, digests, emitted marks)."""


@dataclass(frozen=True)
class LadderInfo:
    """What a bulk command (backfill, export, erase) checks of a ladder first: its hash and rounds."""

    fields: dict[str, str]
    rounds: int
    in_flight: int
    """Rounds still registered or incomplete (a worker is rating the ladder)."""

    @property
    def seq(self) -> int:
        return int(self.fields.get("seq", 0))

    def held(self, ladder: str, then: str) -> str | None:
        """Why the ladder must be left alone now, if a correction holds it (``then``: what to do)."""
        if "hold" not in self.fields:
            return None
        return f"ladder {ladder!r} is held by correction {self.fields['hold']!r} (a re-rate in progress): {then}"

    def refusal(self, ladder: str, then: str) -> str | None:
        """:meth:`held`, or that there is no such ladder."""
        return f"no ladder {ladder!r}" if not self.fields else self.held(ladder, then)


@dataclass
class BulkWriter:
    """Queues plain Redis commands and sends them in pipelines of bounded size."""

    store: Store
    _pipe: Pipeline | None = field(default=None, init=False)
    _commands: int = field(default=0, init=False)
    _arguments: int = field(default=0, init=False)

    @property
    def pipe(self) -> Pipeline:
        if self._pipe is None:
            self._pipe = self.store.client.pipeline(transaction=False)
        return self._pipe

    async def _count(self, arguments: int) -> None:
        self._commands += 1
        self._arguments += arguments
        if self._commands >= FLUSH_COMMANDS or self._arguments >= FLUSH_ARGUMENTS:
            await self.flush()

    async def flush(self) -> None:
        """Send what is queued, in one round trip, and wait for the replies."""
        if self._pipe is not None and self._commands:
            await self._pipe.execute()
        self._pipe, self._commands, self._arguments = None, 0, 0

    close = flush

    async def hset(self, key: str, mapping: Mapping[Any, Any]) -> None:
        """HSET the fields of ``mapping`` (names and values: str, bytes or numbers)."""
        if mapping:
            self.pipe.hset(key, mapping=dict(mapping))
            await self._count(2 * len(mapping))

    async def push_histories(self, histories: Mapping[str, Sequence[bytes]], history_length: int) -> None:
        """Append entries to history lists (key -> entries, oldest first), each list kept to its last
        ``history_length`` entries (push_history.lua)."""
        await self._per_key("push_history", list(histories), [history_length],
                            [[len(entries), *entries] for entries in histories.values()])

    async def hset_many(self, names: Sequence[str], fields: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Set ``fields`` of each hash ``names[i]`` to ``rows[i]`` (hset_many.lua)."""
        await self._per_key("hset_many", names, [len(fields), *fields], rows)

    async def _per_key(self, script: str, names: Sequence[str], head: list[Any], rows: Sequence[Sequence[Any]]) -> None:
        """A ``script`` call per chunk of keys ``names``: ``head``, then each key's ``rows[i]``."""
        if not self.store._sha:
            await self.store.load_scripts()
        for chunk in self.store._chunks(len(names)):
            args = list(head)
            for i in chunk:
                args += rows[i]
            self.store._eval(self.pipe, script, [names[i] for i in chunk], args)
            await self._count(len(args))

    async def zadd(self, key: str, scores: Mapping[str, float | str]) -> None:
        """ZADD in chunks of :data:`ZADD_MEMBERS` members."""
        items = list(scores.items())
        for lo in range(0, len(items), ZADD_MEMBERS):
            self.pipe.zadd(key, dict(items[lo:lo + ZADD_MEMBERS]))  # str scores are sent as they are
            await self._count(2 * min(ZADD_MEMBERS, len(items) - lo))

    async def command(self, *args: str | bytes) -> None:
        """Queue one command as it is (``"DEL", key, ...``)."""
        self.pipe.execute_command(*args)
        await self._count(len(args))

    async def zrem(self, key: str, members: Sequence[str]) -> None:
        """ZREM in chunks of :data:`ZADD_MEMBERS` members."""
        for lo in range(0, len(members), ZADD_MEMBERS):
            self.pipe.zrem(key, *members[lo:lo + ZADD_MEMBERS])
            await self._count(min(ZADD_MEMBERS, len(members) - lo))


class LadderWriter(BulkWriter):
    """A ladder's rated history written as the stream writes it (same keys, fields and bytes), queued
    in bounded pipelines: what a backfill and a correction's re-rate write. ``close`` sends the rest."""

    async def add_ladder(self, ladder: str) -> None:
        """The ladder in the set of ladders."""
        await self.command("SADD", keys.ladders(), ladder)

    async def round(self, ladder: str, round_id: str, seq: int, record: Mapping[Any, Any], *,
                    results: Mapping[str, bytes] | None = None, fanout: Mapping[Any, bytes] | None = None) -> None:
        """A round's record and its place in the ladder's index; with ``results`` its events (player
        -> RatingChange JSON) and ``fanout`` its stored fan-out (field -> message)."""
        await self.hset(keys.round_record(ladder, round_id), record)
        await self.zadd(keys.rounds(ladder), {round_id: seq})
        if results is not None:
            await self.hset(keys.round_results(ladder, round_id), results)
        if fanout is not None:
            await self.hset(keys.round_perf(ladder, round_id), fanout)

    async def drop_round_outputs(self, ladder: str, round_id: str) -> None:
        """Forget what a round's rating left beside its record (:data:`ROUND_OUTPUTS`)."""
        await self.command("DEL", *(key(ladder, round_id) for key in ROUND_OUTPUTS))

    async def clear_history(self, ladder: str, players: Sequence[str]) -> None:
        """Empty the history lists of ``players``."""
        for player in players:
            await self.command("DEL", keys.history(ladder, player))

    async def push_history(self, ladder: str, entries: Mapping[str, Sequence[bytes]]) -> None:
        """Append each player's history entries (oldest first), each list kept to the store's length."""
        histories = {keys.history(ladder, p): e for p, e in entries.items() if e}
        await self.push_histories(histories, self.store.history_length)

    async def players(self, ladder: str, names: Sequence[str], rows: PlayerRows) -> None:
        """Each player's hash (``rows``: a column per field), leaderboard score (its display rating)
        and name index entry."""
        if not names:
            return
        await self.hset_many([keys.player(ladder, p) for p in names], player_hash.WRITE_FIELDS, rows.rows())
        await self.zadd(keys.leaderboard(ladder), dict(zip(names, rows.display_rating)))
        await self.zadd(keys.player_names(ladder), dict.fromkeys(names, 0))

    async def remove_players(self, ladder: str, names: Sequence[str]) -> None:
        """Forget players: their hash, history, leaderboard score and name index entry."""
        for player in names:
            await self.command("DEL", keys.player(ladder, player), keys.history(ladder, player))
        if names:
            await self.zrem(keys.leaderboard(ladder), names)
            await self.zrem(keys.player_names(ladder), names)

    async def ladder_fields(self, ladder: str, fields: Mapping[Any, Any], *, drop: Sequence[str] = ()) -> None:
        """Set fields of the ladder's hash (counters, ``seq``, last round) and delete ``drop``."""
        await self.hset(keys.ladder(ladder), fields)
        if drop:
            await self.command("HDEL", keys.ladder(ladder), *drop)


async def members(store: Store, key: str) -> list[str]:
    """Every member of a sorted set, in score order, as text."""
    return [as_text(m) for m in cast("list[bytes]", await store.client.zrange(key, 0, -1))]


async def ladder_info(store: Store, ladder: str) -> LadderInfo:
    """The ladder's hash, how many rounds it has and how many are in flight (one round trip)."""
    pipe = store.client.pipeline(transaction=False)
    pipe.hgetall(keys.ladder(ladder))
    pipe.zcard(keys.rounds(ladder))
    pipe.zcard(keys.registered_rounds(ladder))
    pipe.zcard(keys.incomplete_rounds(ladder))
    raw, rounds, registered, incomplete = await pipe.execute()
    return LadderInfo({as_text(k): as_text(v) for k, v in raw.items()}, int(rounds), int(registered) + int(incomplete))


async def content_hashes(store: Store, ladder: str, round_ids: Sequence[str]) -> list[str | None]:
    """The stored ``content_hash`` of each round id (None where the ladder has no such round)."""
    hashes = await pipelined(store.client, round_ids,
                             lambda pipe, round_id: pipe.hget(keys.round_record(ladder, round_id), "content_hash"))
    return [None if raw is None else as_text(raw) for raw in hashes]


async def stored_players(store: Store, ladder: str, players: Sequence[str]) -> StoredStates:
    """Last applied seq, packed state and tier of ``players`` (0 / None for players the ladder has not
    rated), in chunked pipelines (a backfill's players may be millions)."""
    rows = await player_hash.read(store.client, ladder, players, (player_hash.LAST_SEQ, player_hash.STATE,
                                                                   player_hash.TIER))
    return StoredStates(np.array([int(seq or 0) for seq, _, _ in rows], dtype=np.int64),
                        [None if state is None else as_bytes(state) for _, state, _ in rows],
                        [None if tier is None else as_bytes(tier) for _, _, tier in rows])
