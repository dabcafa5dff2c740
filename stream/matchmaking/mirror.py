"""A worker's copy of one queue's waiting pool, kept current by deltas instead of a read per tick.

The pool lives in Redis; the worker that ticks a queue keeps its columns here and applies the
joins, cancels and matches it writes itself (``delta``); the service re-loads it in full when the
pool's version in Redis says another writer changed it (``stream.pipeline.matchmaking``). Each
player's rating is kept next to his row: read when his ticket enters the copy (``stale`` marks
it), then re-read round robin, ``refresh`` players per tick (``stale_players``). Pure (numpy, no
I/O); rows are tombstoned on removal and compacted when the dead outnumber a quarter of the rows,
so positions stay put between a tick's ``flush`` and its ``set_ratings``. The rows are one
:class:`~.tickets.TicketColumns`, what the store reads and a tick takes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from .tickets import Ticket, TicketColumns

Array = NDArray[np.float64]
Join = tuple[str, Sequence[str], float, Mapping[str, float] | None]
"""A joined ticket: (ticket id, its party's players, since, latencies)."""


@dataclass
class PoolMirror:
    """The waiting tickets of one queue at ``version`` (module docstring): row ``i`` of ``tickets``
    (live while ``alive[i]``), with each player's ``mu`` / ``sigma`` as last read (NaN: no rating) and
    ``last_time`` next to them, ``fresh`` whether it was read since the player's ticket entered."""

    version: int
    tickets: TicketColumns
    alive: NDArray[np.bool_]
    last_time: Array
    fresh: NDArray[np.bool_]
    row_of: dict[str, int]
    joined: dict[str, Join] = field(default_factory=dict)
    """Tickets joined since the last :meth:`flush` (appended as rows by it)."""
    cursor: int = 0
    """Where the next round-robin slice of :meth:`stale_players` starts (a player position)."""

    @classmethod
    def load(cls, version: int, tickets: TicketColumns) -> "PoolMirror":
        """The pool as read in full at ``version`` (its ratings unread: NaN), its rows in creation
        order (joins arrive in about that order too, so a tick's sort by creation time finds the rows
        nearly sorted and costs little)."""
        tickets = tickets.take(np.argsort(tickets.created, kind="stable"))
        count = int(tickets.players.size)
        return cls(version, tickets, np.ones(len(tickets), dtype=bool), np.full(count, np.nan),
                   np.zeros(count, dtype=bool), dict(zip(tickets.ticket_id.tolist(), range(len(tickets)))))

    def __len__(self) -> int:
        """Live tickets (the pending joins included)."""
        return len(self.row_of) + len(self.joined)

    def delta(self, joins: Sequence[Join], removed: Sequence[str], version: int) -> None:
        """What one script call did to the pool, now at ``version``: tickets joined, tickets gone
        (cancelled, matched, timed out; an id not in the pool is ignored)."""
        for join in joins:
            if join[0] not in self.row_of:
                self.joined[join[0]] = join
        for tid in removed:
            row = self.row_of.pop(tid, None)
            if row is not None:
                self.alive[row] = False
            else:
                self.joined.pop(tid, None)
        self.version = version

    def flush(self) -> None:
        """Append the pending joins as rows (their ratings stale) and compact the dead rows when they
        are more than a quarter of all: positions change only here."""
        dead = int(self.alive.size) - len(self.row_of)
        if dead and dead * 4 > self.alive.size:
            per_player = np.repeat(self.alive, self.tickets.size)
            self.tickets, self.last_time, self.fresh = (self.tickets.take(self.alive), self.last_time[per_player],
                                                        self.fresh[per_player])
            self.alive = np.ones(len(self.tickets), dtype=bool)
            self.row_of = dict(zip(self.tickets.ticket_id.tolist(), range(len(self.tickets))))
            self.cursor = 0
        if not self.joined:
            return
        new = TicketColumns.of([Ticket(t, tuple(players), since, lat) for t, players, since, lat in self.joined.values()],
                               {})
        self.joined = {}
        first = len(self.tickets)
        self.tickets = self.tickets.concat(new)
        self.alive = np.concatenate((self.alive, np.ones(len(new), dtype=bool)))
        self.last_time = np.concatenate((self.last_time, np.full(new.players.size, np.nan)))
        self.fresh = np.concatenate((self.fresh, np.zeros(new.players.size, dtype=bool)))
        self.row_of.update(zip(new.ticket_id.tolist(), range(first, first + len(new))))

    def stale_players(self, refresh: int) -> NDArray[np.int64]:
        """Positions of the live players whose rating to read now: every one not read since his
        ticket entered, and the next ``refresh`` live players round robin (all of them when at most
        ``refresh`` wait)."""
        live = np.flatnonzero(np.repeat(self.alive, self.tickets.size))
        if live.size <= refresh:
            return live
        at = int(np.searchsorted(live, self.cursor))
        turn = np.take(live, np.arange(at, at + refresh), mode="wrap")
        self.cursor = int(live[(at + refresh) % live.size])
        out: NDArray[np.int64] = np.union1d(turn, live[~self.fresh[live]])
        return out

    def set_ratings(self, positions: NDArray[np.int64], mu: Array, sigma: Array, last_time: Array) -> None:
        """The ratings read for ``positions`` (of :meth:`stale_players`)."""
        self.tickets.mu[positions], self.tickets.sigma[positions], self.last_time[positions] = mu, sigma, last_time
        self.fresh[positions] = True

    def columns(self) -> tuple[TicketColumns, Array]:
        """The live tickets as a tick takes them (mu and sigma as last read) and each player's
        ``last_time`` (for a new season's reset); call :meth:`flush` first."""
        if self.alive.all():
            return self.tickets, self.last_time
        return self.tickets.take(self.alive), self.last_time[np.repeat(self.alive, self.tickets.size)]
