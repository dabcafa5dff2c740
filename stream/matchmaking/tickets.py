"""What a tick takes and gives: tickets (a party waiting in a queue), formed matches, the
tick's result, and why a ticket cannot join a queue."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .queues import QueueConfig


@dataclass(frozen=True)
class Ticket:
    """A party waiting in a queue: its players stay on one team; ``latencies`` region -> ms."""

    ticket_id: str
    players: tuple[str, ...]
    created_at: float
    latencies: Mapping[str, float] | None = None


@dataclass(frozen=True)
class FormedMatch:
    """A match: its tickets, its teams of players, the ladder's predicted quality, each team's
    mean probability of finishing ahead of each other team (a duel: its win probability), each
    ticket's wait (s), the region chosen (None without a region rule) and its rating spread."""

    tickets: tuple[str, ...]
    teams: tuple[tuple[str, ...], ...]
    quality: float
    win_probability: tuple[float, ...]
    waits: Mapping[str, float]
    region: str | None = None
    gap: float = 0.0


@dataclass(frozen=True)
class TickResult:
    """What a tick did: matches formed, tickets whose wait passed ``max_wait_s`` (not matched)."""

    matches: list[FormedMatch]
    timed_out: list[str]


def ticket_problem(queue: QueueConfig, ticket: Ticket) -> str | None:
    """Why a ticket cannot join ``queue`` (None if it can): what the service dead-letters."""
    if not ticket.players:
        return "a ticket needs at least one player"
    if len(ticket.players) > queue.team_size:
        return f"a party of {len(ticket.players)} does not fit a team of {queue.team_size}"
    if len(set(ticket.players)) != len(ticket.players):
        return "a player appears twice in the ticket"
    if not np.isfinite(ticket.created_at):
        return "created_at must be a finite time"
    if ticket.latencies is not None and any(not (v >= 0 and np.isfinite(v)) for v in ticket.latencies.values()):
        return "latencies must be finite and >= 0"
    return None
