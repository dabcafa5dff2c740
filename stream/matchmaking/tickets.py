"""What a tick takes and gives: tickets (a party waiting in a queue), formed matches, the
tick's result, and why a ticket cannot join a queue."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .queues import QueueConfig

Array = NDArray[np.float64]


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
    """What a tick did, as arrays over the tick's ``waiting`` columns: match ``k`` takes tickets
    ``tickets[start[k]:start[k + 1]]``, ticket ``tickets[j]`` on team ``team_of[j]``; its predicted
    ``quality[k]``, each team's mean P(ahead) of each other team ``win_probability[k]`` (teams
    columns; a one-team lobby: 1), rating spread ``gap[k]`` and ``region[k]`` (None without a
    region rule); ``late``: tickets whose wait passed ``max_wait_s`` (not matched). Waits are
    ``max(now - waiting.created, 0)``. :attr:`matches` / :attr:`timed_out` read it as objects and ids."""

    waiting: TicketColumns
    now: float
    tickets: NDArray[np.int64]
    start: NDArray[np.int64]
    team_of: NDArray[np.int64]
    quality: Array
    win_probability: Array
    gap: Array
    region: tuple[str | None, ...]
    late: NDArray[np.int64]

    def __len__(self) -> int:
        return int(self.quality.size)

    @property
    def timed_out(self) -> list[str]:
        """The ids of the tickets timed out."""
        out: list[str] = self.waiting.ticket_id[self.late].tolist()
        return out

    @property
    def matches(self) -> list[FormedMatch]:
        """The matches as :class:`FormedMatch`, built column by column (every team of a match is
        full: its players, grouped by team in ticket order, reshape to (matches, teams, team_size))."""
        w = self.waiting
        k = len(self)
        if not k:
            return []
        ids = w.ticket_id[self.tickets].tolist()
        waits = np.maximum(self.now - w.created[self.tickets], 0.0).tolist()
        sizes = w.size[self.tickets]
        rows = w.player_rows(self.tickets)
        teams = self.win_probability.shape[1]
        match_of_player = np.repeat(np.repeat(np.arange(k), np.diff(self.start)), sizes)
        order = np.lexsort((np.arange(rows.size), np.repeat(self.team_of, sizes), match_of_player))
        lineups = [tuple(map(tuple, match)) for match in w.players[rows[order]].reshape(k, teams, -1).tolist()]
        starts, ends = self.start[:-1].tolist(), self.start[1:].tolist()
        return [FormedMatch(tuple(ids[s:e]), lineup, q, tuple(b), dict(zip(ids[s:e], waits[s:e])), region, g)
                for s, e, lineup, q, b, g, region in zip(starts, ends, lineups, self.quality.tolist(),
                                                        self.win_probability.tolist(), self.gap.tolist(), self.region)]


def _offsets(size: NDArray[np.int64]) -> NDArray[np.int64]:
    out: NDArray[np.int64] = np.concatenate(([0], np.cumsum(size))).astype(np.int64)
    return out


@dataclass(frozen=True)
class TicketColumns:
    """Waiting tickets as columns (what a tick reads and forms matches from; no object per
    ticket): ticket ``i`` is ``ticket_id[i]``, created at ``created[i]``, its party the
    ``size[i]`` players ``players[start[i]:start[i + 1]]``, whose ratings are ``mu`` / ``sigma``
    (NaN: no rating yet, a newcomer); ``latencies`` per ticket (None: no ticket has any)."""

    ticket_id: NDArray[np.object_]
    size: NDArray[np.int64]
    players: NDArray[np.object_]
    created: Array
    mu: Array
    sigma: Array
    latencies: tuple[Mapping[str, float] | None, ...] | None = None

    @property
    def start(self) -> NDArray[np.int64]:
        """Each ticket's first player in ``players`` (n + 1 offsets)."""
        return _offsets(self.size)

    def __len__(self) -> int:
        return int(self.size.size)

    @classmethod
    def of(cls, tickets: Sequence[Ticket], ratings: Mapping[str, tuple[float, float]]) -> "TicketColumns":
        """The columns of ``tickets``; ``ratings`` (mu, sigma) per player, absent: a newcomer."""
        players = [p for t in tickets for p in t.players]
        rated = np.array([ratings.get(p, (math.nan, math.nan)) for p in players], dtype=np.float64).reshape(-1, 2)
        latencies = tuple(t.latencies for t in tickets)
        return cls(np.array([t.ticket_id for t in tickets], dtype=object),
                   np.array([len(t.players) for t in tickets], dtype=np.int64), np.array(players, dtype=object),
                   np.array([t.created_at for t in tickets], dtype=np.float64), rated[:, 0], rated[:, 1],
                   latencies if any(lat is not None for lat in latencies) else None)

    def take(self, idx: NDArray[np.int64] | NDArray[np.bool_]) -> "TicketColumns":
        """Tickets ``idx`` (positions, in that order, or a mask: cheaper), each with its party and its
        players' ratings (``latencies`` None when none of them has any)."""
        mask = idx.dtype == np.bool_
        rows = np.repeat(idx, self.size) if mask else self.player_rows(idx)  # type: ignore[arg-type]
        latencies = None if self.latencies is None else tuple(
            self.latencies[i] for i in (np.flatnonzero(idx) if mask else idx).tolist())
        return TicketColumns(self.ticket_id[idx], self.size[idx], self.players[rows], self.created[idx], self.mu[rows],
                             self.sigma[rows], latencies if latencies and any(latencies) else None)

    def concat(self, other: "TicketColumns") -> "TicketColumns":
        """These tickets, then ``other``'s."""
        latencies = (None if self.latencies is None and other.latencies is None
                     else (self.latencies or (None,) * len(self)) + (other.latencies or (None,) * len(other)))
        return TicketColumns(np.concatenate((self.ticket_id, other.ticket_id)), np.concatenate((self.size, other.size)),
                             np.concatenate((self.players, other.players)),
                             np.concatenate((self.created, other.created)), np.concatenate((self.mu, other.mu)),
                             np.concatenate((self.sigma, other.sigma)), latencies)

    def rows(self) -> list[tuple[str, tuple[str, ...], float]]:
        """(ticket id, players, created) of each ticket, by ticket id (tests and tools; a tick reads
        the columns)."""
        flat, start = self.players.tolist(), self.start.tolist()
        return sorted((t, tuple(flat[start[i]:start[i + 1]]), c)
                      for i, (t, c) in enumerate(zip(self.ticket_id.tolist(), self.created.tolist())))

    def player_rows(self, idx: NDArray[np.int64]) -> NDArray[np.int64]:
        """The rows in ``players`` of tickets ``idx``, ticket after ticket (vectorised)."""
        size = self.size[idx]
        first = self.start[idx]
        out: NDArray[np.int64] = np.repeat(first - _offsets(size)[:-1], size) + np.arange(int(size.sum()))
        return out

    def ticket(self, i: int) -> Ticket:
        """Ticket ``i`` as an object (error messages)."""
        s, e = int(self.start[i]), int(self.start[i + 1])
        return Ticket(str(self.ticket_id[i]), tuple(self.players[s:e].tolist()), float(self.created[i]),
                      None if self.latencies is None else self.latencies[i])


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
