"""What a correction reads and records in Redis: the ladder's stored rounds, its hold, its
ledger and the ratings before a re-rate (``stream.pipeline.corrections`` is the handler).

All of it is on the ladder's slot ``{L}`` except the players' ratings (read in chunked pipelines).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from stream.store import keys, player_hash
from stream.store.bulk import members
from stream.store.client import as_bytes, as_text
from stream.store.store import Store

RECORD_FIELDS = ("status", "occurred_at", "perf_ceiling", "field_size", "amended", "corrections", "body")
"""The round record fields a re-rate reads (``amended``: the standings a correction put in place, or an
inserted late round's; ``corrections``: the trail; ``body``: a ``late`` round's, until its insert)."""


@dataclass(frozen=True)
class StoredRound:
    """One round of a ladder as Redis holds it: record fields and stored fan-out messages."""

    round_id: str
    seq: int
    record: dict[str, str]
    fanout: list[bytes] = field(default_factory=list)

    @property
    def status(self) -> str:
        return self.record.get("status", "")


ROUNDS_PER_READ = 500
"""Rounds per read_rounds.lua call (one reply each)."""


async def ladder_rounds(store: Store, ladder: str) -> list[StoredRound]:
    """Every round of the ladder in seq order, with its record fields and stored fan-out
    (read_rounds.lua, ROUNDS_PER_READ rounds a call; the next pipelines in Redis while one is decoded)."""
    ids = await members(store, keys.rounds(ladder))
    chunks = [ids[lo:lo + ROUNDS_PER_READ] for lo in range(0, len(ids), ROUNDS_PER_READ)]
    fields = [*RECORD_FIELDS, "seq"]
    width = len(fields)
    out: list[StoredRound] = []
    groups = [chunks[lo:lo + 8] for lo in range(0, len(chunks), 8)]

    def read(group: list[list[str]]) -> asyncio.Future[list[Any]]:
        def build(pipe: Any) -> None:
            for chunk in group:
                names = [key for round_id in chunk
                         for key in (keys.round_record(ladder, round_id), keys.round_perf(ladder, round_id))]
                store._eval(pipe, "read_rounds", names, fields)

        return asyncio.ensure_future(store._run(build))

    pending = [read(group) for group in groups[:2]]
    try:
        for i, group in enumerate(groups):
            replies = await pending.pop(0)
            # the next groups' reads run in Redis while this one is decoded here
            if i + 2 < len(groups):
                pending.append(read(groups[i + 2]))
            for chunk, flat in zip(group, replies):
                at = 0
                for round_id in chunk:  # per round: its fields (the last one its seq), the fan-out's size, messages
                    values = flat[at:at + width]
                    parts = int(flat[at + width])
                    fanout = flat[at + width + 1:at + width + 1 + parts]
                    out.append(StoredRound(round_id, int(values[-1]), _record(values),
                                           fanout if not fanout or isinstance(fanout[0], bytes) else
                                           [as_bytes(m) for m in fanout]))
                    at += width + 1 + parts
    finally:
        for future in pending:
            future.cancel()
    return out


_PLAIN = (RECORD_FIELDS.index("perf_ceiling"), RECORD_FIELDS.index("amended"), RECORD_FIELDS.index("corrections"),
          RECORD_FIELDS.index("body"))
_STATUS, _OCCURRED, _SIZE = (RECORD_FIELDS.index(name) for name in ("status", "occurred_at", "field_size"))


def _record(values: list[Any]) -> dict[str, str]:
    """A round record's fields read (``RECORD_FIELDS`` order; None where absent) as text; the
    common round (no ceiling, amendment, trail or body) without a loop over the fields."""
    a, b, c, d = _PLAIN
    status, occurred, size = values[_STATUS], values[_OCCURRED], values[_SIZE]
    if values[a] is None and values[b] is None and values[c] is None and values[d] is None \
            and isinstance(status, bytes) and isinstance(occurred, bytes) and isinstance(size, bytes):
        return {"status": status.decode(), "occurred_at": occurred.decode(), "field_size": size.decode()}
    return {name: as_text(v) for name, v in zip(RECORD_FIELDS, values) if v is not None}


async def hold(store: Store, ladder: str, correction_id: str, *, now: float) -> str:
    """Hold the ladder for ``correction_id``; returns the id that holds it (another one: wait)."""
    (holder,) = await store._run(lambda pipe: store._eval(pipe, "hold_ladder", [keys.ladder(ladder)],
                                                          [correction_id, repr(now)]))
    return as_text(holder)


async def release(store: Store, ladder: str, correction_id: str) -> bool:
    """Release the ladder's hold if ``correction_id`` has it (nothing recorded in the ledger)."""
    return await _finish(store, ladder, correction_id, "", "0")


async def record_rejection(store: Store, ladder: str, correction_id: str, reason: str, message: str) -> None:
    """Record why a correction was dead-lettered (read by ``stream void/amend --wait``)."""
    await store.client.hset(keys.rejected_corrections(ladder), correction_id,
                            json.dumps({"reason": reason, "message": message}, ensure_ascii=False))


async def outcome(store: Store, ladder: str, correction_id: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(ledger entry, rejection) of a correction, each None while absent (``stream void/amend --wait``)."""
    pipe = store.client.pipeline(transaction=False)
    pipe.hget(keys.corrections(ladder), correction_id)
    pipe.hget(keys.rejected_corrections(ladder), correction_id)
    applied, rejected = await pipe.execute()
    return (None if applied is None else json.loads(applied)), (None if rejected is None else json.loads(rejected))


async def mark_round(store: Store, ladder: str, round_id: str, fields: dict[Any, Any], *, drop_body: bool) -> None:
    """Set fields of a round's record (a correction's trail, status or standings), deleting its
    ``body`` when ``drop_body`` (a late round once inserted)."""
    record = keys.round_record(ladder, round_id)
    await store.client.hset(record, mapping=fields)
    if drop_body:
        await store.client.hdel(record, "body")


async def results_trimmed_seq(store: Store, ladder: str) -> int:
    """The seq up to which the ladder's round results were trimmed (0: none)."""
    return int(await store.client.hget(keys.ladder(ladder), "results_trimmed_seq") or 0)


async def recount_players(store: Store, ladder: str) -> None:
    """Set the ladder's ``players`` counter to its leaderboard's size (every writer keeps both)."""
    await store.client.hset(keys.ladder(ladder), "players", await store.client.zcard(keys.leaderboard(ladder)))


async def ledger_entry(store: Store, ladder: str, correction_id: str) -> dict[str, Any] | None:
    """The ladder's ledger entry of a correction already applied (None if it is not)."""
    raw = await store.client.hget(keys.corrections(ladder), correction_id)
    return None if raw is None else json.loads(raw)


async def finish(store: Store, ladder: str, correction_id: str, entry: dict[str, Any], *, rerated: bool) -> bool:
    """Record the correction in the ledger, drop its plan, release its hold (finish_correction.lua)."""
    return await _finish(store, ladder, correction_id, json.dumps(entry, separators=(",", ":"), ensure_ascii=False),
                         "1" if rerated else "0")


async def _finish(store: Store, ladder: str, correction_id: str, entry: str, rerated: str) -> bool:
    (released,) = await store._run(lambda pipe: store._eval(
        pipe, "finish_correction",
        [keys.ladder(ladder), keys.corrections(ladder), keys.correction_plan(ladder, correction_id)],
        [correction_id, entry, rerated]))
    return bool(int(released))


async def ratings(store: Store, ladder: str, players: Sequence[str]) -> dict[str, tuple[str, str]]:
    """The stored (mu, sigma) text of each of ``players`` that has a state."""
    rows = await player_hash.read(store.client, ladder, players, player_hash.RATING)
    return {player: (as_text(mu), as_text(sigma)) for player, (mu, sigma) in zip(players, rows)
            if mu is not None and sigma is not None}


async def read_plan(store: Store, ladder: str, correction_id: str) -> dict[str, list[str]] | None:
    """The ratings before the correction as its plan recorded them (player → [mu, sigma] text), or None."""
    raw = await store.client.get(keys.correction_plan(ladder, correction_id))
    return None if raw is None else json.loads(raw)


async def write_plan(store: Store, ladder: str, correction_id: str, before: dict[str, list[str]]) -> None:
    """Record the ratings before the correction (one SET: a plan is whole or absent)."""
    await store.client.set(keys.correction_plan(ladder, correction_id),
                           json.dumps(before, separators=(",", ":"), ensure_ascii=False))


REWRITE_ARGUMENTS = 20_000
"""Arguments per rewrite_rounds.lua call (bounds how long one call blocks Redis)."""


@dataclass(frozen=True)
class RoundRewrite:
    """A re-rated round's new results (player → RatingChange JSON; empty: none kept) and fan-out."""

    round_id: str
    results: dict[str, bytes]
    fanout: dict[Any, bytes]


async def rewrite_rounds(store: Store, ladder: str, correction_id: str, rounds: Sequence[RoundRewrite]) -> None:
    """Mark each round ``rerated_by`` the correction and replace its results and fan-out
    (rewrite_rounds.lua: calls of about REWRITE_ARGUMENTS arguments, a few per pipeline)."""
    calls: list[tuple[list[str], list[Any]]] = []
    names: list[str] = []
    args: list[Any] = [correction_id]
    for r in rounds:
        names += [keys.round_record(ladder, r.round_id), keys.round_results(ladder, r.round_id),
                  keys.round_perf(ladder, r.round_id), keys.round_digests(ladder, r.round_id)]
        for fields in (r.results, r.fanout):
            args.append(len(fields))
            args.extend(chain.from_iterable(fields.items()))  # name, value, name, value, ...
        if len(args) >= REWRITE_ARGUMENTS:
            calls.append((names, args))
            names, args = [], [correction_id]
    if names:
        calls.append((names, args))
    for lo in range(0, len(calls), 8):
        def build(pipe: Any, group: list[tuple[list[str], list[Any]]] = calls[lo:lo + 8]) -> None:
            for call_names, call_args in group:
                store._eval(pipe, "rewrite_rounds", call_names, call_args)

        await store._run(build)
