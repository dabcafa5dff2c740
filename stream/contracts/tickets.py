"""Matchmaking's wire formats: tickets in (topic ``match-tickets``), matches and ticket lifecycle
events out (topics ``matches`` and ``ticket-events``), schemas ``match-ticket.v1``, ``match.v1``,
``ticket-event.v1``::

    {"ticket_id": "t-1", "queue": "duel", "players": ["ann"], "latencies": {"eu": 30}}   a join
    {"ticket_id": "t-1", "queue": "duel", "cancel": true}                                a cancel

A join is a party of 1..team_size distinct players who stay on one team; ``ticket_id`` is the
idempotency key. :func:`parse_ticket` validates the shape (the queue's own rules, its existence
and team size, are checked by the pipeline with :func:`check_party`); every rejection is a
:class:`~stream.contracts.round.RoundRejected` with a reason of the dead-letter schema.

:func:`match_id` is a hash of the queue and the sorted ticket ids: a tick replayed after a crash
forms the same match under the same id, and consumers dedupe by it.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from stream.contracts.round import (BAD_PARTY, BAD_TICKET, ID_TOO_LONG, UNKNOWN_QUEUE, Limits, RoundRejected,
                                    decode_object)
from stream.contracts.schemas import MATCH_TICKET

SEARCHING = "searching"
MATCHED = "matched"
CANCELLED = "cancelled"
TOO_LATE = "too_late"
TIMED_OUT = "timed_out"
REJECTED = "rejected"
STATUSES = (SEARCHING, MATCHED, CANCELLED, TOO_LATE, TIMED_OUT, REJECTED)
"""A ticket's lifecycle statuses (``ticket-events``; ``too_late`` answers a cancel that lost the race)."""
FINAL_STATUSES = (MATCHED, CANCELLED, TIMED_OUT, REJECTED)

#: Reasons of a ``rejected`` ticket event (a valid join the pool refuses).
BUSY_WAITING = "waiting"
"""A player of the party already holds a live ticket in this queue."""
BUSY_IN_MATCH = "in_match"
"""A player of the party is in a match of this queue whose round is not rated yet (MATCH_HOLD_S)."""
CANCELLED_BEFORE = "cancelled"
"""The ticket id was cancelled before its join arrived."""


def _dumps(obj: dict[str, Any]) -> str:
    """Compact JSON (orjson: the events of a burst of tickets are encoded on the worker's hot path);
    a NaN or an infinity is refused (ValueError), as ``json.dumps(allow_nan=False)`` would."""
    return orjson.dumps(obj).decode()


def _finite(total: float, what: str) -> None:
    """ValueError unless ``total`` (a sum of the event's numbers: NaN and infinities propagate) is finite."""
    if not math.isfinite(total):
        raise ValueError(f"{what}: a number is not finite")


@dataclass(frozen=True)
class TicketJoin:
    """A validated join: a party of players queueing together (they stay on one team)."""

    ticket_id: str
    queue: str
    players: tuple[str, ...]
    latencies: dict[str, float] | None = None
    created_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ticket_id": self.ticket_id, "queue": self.queue, "players": list(self.players)}
        if self.latencies is not None:
            out["latencies"] = self.latencies
        if self.created_at is not None:
            out["created_at"] = self.created_at
        return out

    def to_json(self) -> str:
        return _dumps(self.to_dict())


@dataclass(frozen=True)
class TicketCancel:
    """A validated cancel of ticket ``ticket_id`` of ``queue``."""

    ticket_id: str
    queue: str

    def to_json(self) -> str:
        return _dumps({"ticket_id": self.ticket_id, "queue": self.queue, "cancel": True})


Ticket = TicketJoin | TicketCancel


def parse_ticket(raw: bytes | str | dict[str, Any], *, limits: Limits) -> Ticket:
    """Validate one ``match-tickets`` message; raise :class:`RoundRejected` (``bad_ticket``,
    ``id_too_long``, ``bad_party`` for a player twice, or a decoding reason)."""
    data = decode_object(raw, limits, MATCH_TICKET, what="ticket", not_object=BAD_TICKET, invalid=BAD_TICKET)
    ticket_id, queue = data["ticket_id"], data["queue"]
    if len(ticket_id) > limits.max_id_length:
        raise RoundRejected(ID_TOO_LONG, f"ticket_id longer than MAX_ID_LENGTH={limits.max_id_length}", "ticket_id")
    if data.get("cancel"):
        return TicketCancel(ticket_id, queue)
    players = tuple(data["players"])
    for i, player in enumerate(players):
        if len(player) > limits.max_id_length:
            raise RoundRejected(ID_TOO_LONG, f"player id longer than MAX_ID_LENGTH={limits.max_id_length}",
                                f"players.{i}")
    if len(set(players)) != len(players):
        raise RoundRejected(BAD_PARTY, "a player is twice in the party", "players")
    created = data.get("created_at")
    if created is not None and not math.isfinite(float(created)):
        raise RoundRejected(BAD_TICKET, "created_at must be a finite number", "created_at")
    latencies = data.get("latencies")
    if latencies is not None:
        latencies = {str(k): float(v) for k, v in latencies.items()}
        if not all(math.isfinite(v) for v in latencies.values()):
            raise RoundRejected(BAD_TICKET, "latencies must be finite numbers", "latencies")
    return TicketJoin(ticket_id, queue, players, latencies, None if created is None else float(created))


def check_party(ticket: Ticket, *, queues: dict[str, int]) -> None:
    """Raise ``unknown_queue`` unless ``ticket.queue`` is one of ``queues`` (queue -> team_size),
    ``bad_party`` if a join's party is larger than the queue's team_size."""
    size = queues.get(ticket.queue)
    if size is None:
        raise RoundRejected(UNKNOWN_QUEUE, f"no queue {ticket.queue!r} in QUEUES", "queue")
    if isinstance(ticket, TicketJoin) and len(ticket.players) > size:
        raise RoundRejected(BAD_PARTY, f"a party of {len(ticket.players)} in queue {ticket.queue!r} of teams of "
                            f"{size}", "players")


def match_id(queue: str, ticket_ids: list[str] | tuple[str, ...]) -> str:
    """The match's id: ``m-`` and 32 hex digits of sha256 over the queue and the sorted ticket ids
    (the same tickets always form the same id, whatever the tick that formed them)."""
    text = "\x00".join([queue, *sorted(ticket_ids)])
    return "m-" + hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Match:
    """A formed match (topic ``matches``, key = queue): publish its result on ``rounds`` with
    round_id = ``match_id``."""

    match_id: str
    queue: str
    ladder: str
    teams: list[list[str]]
    tickets: list[str]
    quality: float
    win_probability: list[float]
    waits: dict[str, float]
    formed_at: float

    def to_dict(self) -> dict[str, Any]:
        return {"match_id": self.match_id, "queue": self.queue, "ladder": self.ladder, "teams": self.teams,
                "tickets": self.tickets, "quality": self.quality, "win_probability": self.win_probability,
                "waits": self.waits, "formed_at": self.formed_at}

    def to_json(self) -> str:
        _finite(self.quality + sum(self.win_probability) + sum(self.waits.values()) + self.formed_at, "match")
        return _dumps(self.to_dict())

    @classmethod
    def from_json(cls, raw: bytes | str) -> Match:
        d = orjson.loads(raw)
        return cls(d["match_id"], d["queue"], d["ladder"], d["teams"], d["tickets"], float(d["quality"]),
                   [float(p) for p in d["win_probability"]], {k: float(v) for k, v in d["waits"].items()},
                   float(d["formed_at"]))


@dataclass(frozen=True)
class TicketEvent:
    """One step of a ticket's life (topic ``ticket-events``, key = queue)."""

    ticket_id: str
    queue: str
    status: str
    wait: float
    at: float
    match_id: str | None = None
    reason: str | None = None
    players: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"ticket_id": self.ticket_id, "queue": self.queue, "status": self.status, "wait": self.wait,
                "at": self.at, "match_id": self.match_id, "reason": self.reason, "players": self.players}

    def to_json(self) -> str:
        _finite(self.wait + self.at, "ticket event")
        return _dumps(self.to_dict())

    @classmethod
    def from_json(cls, raw: bytes | str) -> TicketEvent:
        d = orjson.loads(raw)
        return cls(d["ticket_id"], d["queue"], d["status"], float(d["wait"]), float(d["at"]), d.get("match_id"),
                   d.get("reason"), list(d.get("players") or []))


def matched_events_json(queue: str, match_id: str, at: float, tickets: Sequence[str], waits: Sequence[float],
                        parties: Sequence[list[str]]) -> list[str]:
    """The ``matched`` :class:`TicketEvent` JSON of each ticket of a match (ticket ``tickets[i]``,
    waited ``waits[i]``, party ``parties[i]``): byte for byte ``TicketEvent(...).to_json()``, without
    an object per event (a tick encodes hundreds on the path from a ticket to its match)."""
    _finite(at + sum(waits), "ticket event")
    dumps = orjson.dumps
    return [dumps({"ticket_id": t, "queue": queue, "status": MATCHED, "wait": w, "at": at, "match_id": match_id,
                   "reason": None, "players": p}).decode() for t, w, p in zip(tickets, waits, parties)]
