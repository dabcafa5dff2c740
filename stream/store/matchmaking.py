"""The matchmaking pool in Redis: joins, cancels, a tick's atomic commit, the outbox of records to
send, the release of players whose match was rated. Every byte of it (keys: ``keys.mm_*``, one hash
slot per queue ``{q:Q}``; scripts ``mm_*.lua``).

Guarantees, each one script: a join is idempotent on its ticket id and refused while a player of
the party waits in the queue or is in a match of it not rated yet; a cancel is honoured while the
ticket waits; a tick's matches are recorded only if every ticket of each still waits (so no ticket
is matched twice and no player booked twice, whatever ticks overlap or replay after a crash); the
records a commit produced stay in the outbox until :meth:`MatchStore.sent` (at-least-once sending).
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import chain, repeat
from operator import itemgetter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from stream.store import keys, player_hash
from stream.store.client import as_bytes, as_text
from stream.store.store import Store

if TYPE_CHECKING:
    from stream.matchmaking.tickets import TicketColumns

STATUS_TTL_S = 86_400.0
"""Statuses of finished tickets and records of released matches are kept this long (a redelivered
join or cancel within it is still recognised; ``stream queue status`` answers for it)."""
RECENT_MATCHES = 1_000
"""Recent matches kept per queue (``formed_at quality max_wait``: the read API's quality figures)."""
RECENT_WAITS = 10_000
"""Recent matched tickets' waits kept per queue (the read API's wait percentiles)."""
LIVE_CHECKED = 500
"""Matches in play whose round status one tick checks: a slice of the live set, the next slice at
the next tick (:meth:`MatchStore.read_pool`'s ``live_from``), so a tick's cost does not grow with the
matches in play; a rated match's players are released within (in play / LIVE_CHECKED) ticks."""


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while acyclic containers are made in bulk: decoding a
    pool of 100,000 tickets makes 200,000, and the collector would otherwise traverse them over
    and over (half the decode's CPU time); a tick's match records likewise (half their CPU time
    at 5,000 matches)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def pool_columns(fields: Sequence[Any], records: Sequence[Any]) -> TicketColumns:
    """The waiting tickets of the pool hash's ticket ids and records (JSON ``{players, since,
    latencies}``; all bytes, or all text, as a client returns them) as a tick's columns (``created``:
    since; ratings not read: NaN), in the order Redis returned them (a tick's result does not depend
    on it): the records decoded in one ``orjson.loads`` call (a JSON array of them), each column read
    with C-level maps (no Python code per ticket)."""
    from stream.matchmaking.tickets import TicketColumns  # the matchmaker's maths, loaded only by a tick

    n = len(records)
    with collector_paused():
        raw = records if not records or isinstance(records[0], bytes) else list(map(str.encode, records))
        decoded = orjson.loads(b"[" + b",".join(raw) + b"]")
        parties = list(map(itemgetter("players"), decoded))
        latencies = tuple(map(dict.get, decoded, repeat("latencies")))
        ids = list(map(bytes.decode, fields)) if fields and isinstance(fields[0], bytes) else list(fields)
        players = np.array(list(chain.from_iterable(parties)), dtype=object)
        unread = np.full(players.size, np.nan)
        return TicketColumns(np.array(ids, dtype=object), np.fromiter(map(len, parties), dtype=np.int64, count=n),
                             players, np.fromiter(map(itemgetter("since"), decoded), dtype=np.float64, count=n),
                             unread, unread.copy(), latencies if any(latencies) else None)


@dataclass(frozen=True)
class PoolView:
    """What a tick reads in one round trip: the pool's version (``keys.mm_version``), the waiting
    tickets (columns; None when not asked for), a slice of the matches in play (at most
    LIVE_CHECKED, oldest first from ``live_from``) and how many are in play, and the outbox's
    records not yet acknowledged (entry → bytes)."""

    tickets: TicketColumns | None
    live: list[str]
    outbox: dict[str, bytes]
    in_play: int = 0
    version: int = 0


@dataclass(frozen=True)
class Applied:
    """What a batch of joins and cancels did: each op's outcome, and the pool's version before and
    after the batch (equal: the pool did not change)."""

    outcomes: list["Outcome"]
    before: int
    after: int


@dataclass(frozen=True)
class Outcome:
    """What a join or a cancel did: ``new`` / ``duplicate`` / ``rejected`` (a join), ``cancelled`` /
    ``too_late`` (a cancel); ``status`` the ticket's stored status record; ``reason`` and ``player``
    why a join was rejected."""

    outcome: str
    status: dict[str, Any]
    reason: str | None = None
    player: str | None = None


@dataclass(frozen=True)
class CommitMatch:
    """One match of a tick to commit: its id, body (the Match JSON), records to send, tickets with
    their waits, players, quality, when formed."""

    match_id: str
    formed_at: float
    body: str
    records: bytes
    quality: float
    tickets: Sequence[str]
    waits: Sequence[float]
    players: Sequence[str]


@dataclass(frozen=True)
class CommitTimeout:
    """A ticket that waited too long: its wait and the records to send (its timed_out event)."""

    ticket_id: str
    wait: float
    records: bytes


@dataclass(frozen=True)
class Committed:
    """What a commit recorded: the matches (others lost a race and were dropped), the timeouts, the
    pool's version before and after (equal: nothing left the pool)."""

    matches: list[str]
    timed_out: list[str]
    before: int = 0
    after: int = 0


@dataclass(frozen=True)
class QueueState:
    """A queue's state for the read API: tickets waiting, players waiting, matches in match, records
    unsent, recent matches ``(formed_at, quality, max_wait)`` and waits ``(formed_at, wait)``, newest first."""

    tickets_waiting: int
    players_waiting: int
    in_match: int
    unsent: int
    recent: list[tuple[float, float, float]]
    waits: list[tuple[float, float]]

    def summary(self, queue: str) -> dict[str, Any]:
        """The read API's document of the queue: waiting, wait p50/p90/p99 and quality (mean, p10,
        p50) of the recent matches, and their time series (newest first) for the dashboard."""
        waits = np.array([w for _, w in self.waits], dtype=float)
        quality = np.array([q for _, q, _ in self.recent], dtype=float)

        def pct(values: np.ndarray, q: float) -> float | None:
            return None if values.size == 0 else float(np.percentile(values, q))

        return {
            "queue": queue, "tickets_waiting": self.tickets_waiting, "players_waiting": self.players_waiting,
            "matches_in_play": self.in_match, "records_unsent": self.unsent,
            "wait_s": {"p50": pct(waits, 50), "p90": pct(waits, 90), "p99": pct(waits, 99), "tickets": int(waits.size)},
            "quality": {"mean": None if quality.size == 0 else float(quality.mean()), "p10": pct(quality, 10),
                        "p50": pct(quality, 50), "matches": int(quality.size)},
            "recent_matches": [{"formed_at": f, "quality": q, "max_wait_s": w} for f, q, w in self.recent],
        }


class MatchStore:
    """Matchmaking's Redis access, over the service's :class:`Store` (its connection and scripts)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def join(self, queue: str, tickets: Sequence[tuple[str, Sequence[str], float, dict[str, float] | None]], *,
                   now: float, hold_s: float) -> list[Outcome]:
        """Join tickets ``(ticket_id, players, since, latencies)`` to ``queue``'s pool (:meth:`apply`)."""
        return (await self.apply(queue, [("join", t) for t in tickets], now=now, hold_s=hold_s)).outcomes

    async def cancel(self, queue: str, ticket_ids: Sequence[str], *, now: float) -> list[Outcome]:
        """Cancel tickets of ``queue`` (:meth:`apply`)."""
        return (await self.apply(queue, [("cancel", t) for t in ticket_ids], now=now, hold_s=0.0)).outcomes

    async def apply(self, queue: str, ops: Sequence[tuple[str, Any]], *, now: float, hold_s: float) -> Applied:
        """Joins (``("join", (ticket_id, players, since, latencies))``) and cancels (``("cancel",
        ticket_id)``) of ``queue`` in the order given: one mm_apply.lua call (one round trip, one
        script run for the whole batch); with the pool's version before and after."""
        if not ops:
            return Applied([], 0, 0)
        args: list[Any] = []
        for kind, arg in ops:
            if kind == "join":
                tid, players, since, latencies = arg
                record = orjson.dumps({"players": list(players), "since": since, "latencies": latencies})
                args += ["join", 4 + len(players), tid, repr(now), repr(hold_s), record, *players]
            else:
                args += ["cancel", 2, arg, repr(now)]
        ((before, after, replies),) = await self.store._run(
            lambda pipe: self.store._eval(pipe, "mm_apply", keys.mm_keys(queue), args))
        out = []
        for reply in replies:
            kind = as_text(reply[0])
            if kind == "rejected":
                out.append(Outcome(kind, orjson.loads(reply[3]), as_text(reply[1]), as_text(reply[2])))
            else:
                out.append(Outcome(kind, orjson.loads(reply[1])))
        return Applied(out, int(before), int(after))

    async def read_pool(self, queue: str, live_from: int = 0, *, tickets: bool = True) -> PoolView:
        """The pool's version, the waiting tickets (:class:`TicketColumns`; not read without
        ``tickets``: a worker holding a current copy compares the version only), LIVE_CHECKED
        matches in play from rank ``live_from``, the unsent outbox: one round trip. The version is
        read before the tickets: a change in between shows as a newer version at the next read (the
        copy is re-read then), never as a version newer than the tickets read."""
        def build(pipe: Any) -> None:
            pipe.execute_command("GET", keys.mm_version(queue))
            pipe.execute_command("ZRANGE", keys.mm_live(queue), live_from, live_from + LIVE_CHECKED - 1)
            pipe.execute_command("ZCARD", keys.mm_live(queue))
            pipe.execute_command("HGETALL", keys.mm_outbox(queue))
            if tickets:
                pipe.execute_command("HGETALL", keys.mm_pool(queue))

        version, live, in_play, outbox, *pool = await self.store._run(build)
        entries, records = _hash(outbox)
        return PoolView(pool_columns(*_hash(pool[0])) if tickets else None, [as_text(m) for m in live],
                        {as_text(e): as_bytes(raw) for e, raw in zip(entries, records)}, int(in_play), int(version or 0))

    async def ratings(self, ladder: str, players: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(mu, sigma, last_time) of each player on ``ladder``, NaN for a player without a rating
        (one round trip; ``last_time``: the season he last played in, for a new season's soft reset)."""
        if not players:
            return np.empty(0), np.empty(0), np.empty(0)
        columns = await self.store._read_players(keys.players(ladder, players),
                                                 player_hash.numeric(*player_hash.RATING, player_hash.LAST_TIME))
        return (np.asarray(columns[player_hash.MU], dtype=float), np.asarray(columns[player_hash.SIGMA], dtype=float),
                np.asarray(columns[player_hash.LAST_TIME], dtype=float))

    async def commit(self, queue: str, matches: Sequence[CommitMatch], timeouts: Sequence[CommitTimeout], *,
                     now: float) -> Committed:
        """A tick's matches and timeouts, atomically (mm_commit.lua; module docstring)."""
        args: list[Any] = [repr(now), len(matches), len(timeouts), repr(now - STATUS_TTL_S), RECENT_MATCHES,
                           RECENT_WAITS]
        for m in matches:
            args += [m.match_id, repr(m.formed_at), m.body, m.records, repr(float(m.quality)), len(m.tickets),
                     *m.tickets, *(repr(float(w)) for w in m.waits), len(m.players), *m.players]
        for t in timeouts:
            args += [t.ticket_id, repr(float(t.wait)), t.records]
        (reply,) = await self.store._run(lambda pipe: self.store._eval(pipe, "mm_commit", keys.mm_keys(queue), args))
        return Committed([as_text(m) for m in reply[0]], [as_text(t) for t in reply[1]], int(reply[2]), int(reply[3]))

    async def sent(self, queue: str, entries: Sequence[str]) -> None:
        """The outbox entries whose records the broker acknowledged: forget them."""
        if entries:
            await self.store._run(lambda pipe: pipe.execute_command("HDEL", keys.mm_outbox(queue), *entries))

    async def release(self, queue: str, rated: Sequence[str], *, now: float, hold_s: float) -> tuple[list[str], list[str]]:
        """Release the players of the matches whose round is rated, and of expired ones (mm_release.lua)."""
        (reply,) = await self.store._run(lambda pipe: self.store._eval(
            pipe, "mm_release", keys.mm_keys(queue), [repr(now), repr(hold_s), *rated]))
        return [as_text(m) for m in reply[0]], [as_text(m) for m in reply[1]]

    async def round_statuses(self, ladder: str, round_ids: Sequence[str]) -> list[str | None]:
        """The rating status of rounds (a match's round has round_id = match_id)."""
        return await self.store.round_statuses(ladder, round_ids) if round_ids else []


def _hash(reply: Any) -> tuple[list[Any], list[Any]]:
    """An HGETALL reply (a dict, or a flat list with a lean pipeline) as its fields and its values."""
    if isinstance(reply, dict):
        return list(reply), list(reply.values())
    return list(reply[::2]), list(reply[1::2])


# ---- reads (the read API and the CLI; a plain redis.asyncio client) -----------------------------
async def queue_state(client: Any, queue: str) -> QueueState:
    """A queue's state (one round trip)."""
    pipe = client.pipeline(transaction=False)
    pipe.hlen(keys.mm_pool(queue))
    pipe.hlen(keys.mm_waiting(queue))
    pipe.zcard(keys.mm_live(queue))
    pipe.hlen(keys.mm_outbox(queue))
    pipe.lrange(keys.mm_recent(queue), 0, RECENT_MATCHES - 1)
    pipe.lrange(keys.mm_waits(queue), 0, RECENT_WAITS - 1)
    tickets, players, live, unsent, recent, waits = await pipe.execute()
    rows = [tuple(float(x) for x in as_text(r).split()) for r in recent]
    wrows = [tuple(float(x) for x in as_text(w).split()) for w in waits]
    return QueueState(int(tickets), int(players), int(live), int(unsent), rows, wrows)  # type: ignore[arg-type]


async def ticket_status(client: Any, queue: str, ticket_id: str) -> dict[str, Any] | None:
    """A ticket's stored status (None: unknown, or forgotten STATUS_TTL_S after it finished); a
    waiting ticket carries its party and since when it waits."""
    pipe = client.pipeline(transaction=False)
    pipe.hget(keys.mm_status(queue), ticket_id)
    pipe.hget(keys.mm_pool(queue), ticket_id)
    status, waiting = await pipe.execute()
    if status is None:
        return None
    out: dict[str, Any] = json.loads(status)
    if waiting is not None:
        out["since"] = json.loads(waiting)["since"]
    return out


async def match_record(client: Any, queue: str, match_id: str) -> tuple[dict[str, Any] | None, str | None]:
    """A match as emitted (with its predicted win probabilities) and its outcome (``rated|when``,
    ``expired|when``, or None while its players are in match)."""
    pipe = client.pipeline(transaction=False)
    pipe.hget(keys.mm_matches(queue), match_id)
    pipe.hget(keys.mm_outcomes(queue), match_id)
    body, outcome = await pipe.execute()
    return (None if body is None else json.loads(body)), (None if outcome is None else as_text(outcome))
