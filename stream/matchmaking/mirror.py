"""A worker's copy of one queue's waiting pool, kept current by deltas instead of a read per tick.

The pool lives in Redis; the worker that ticks a queue keeps its columns here and applies the
joins, cancels and matches it writes itself (``delta``); the service re-loads it in full when the
pool's version in Redis says another writer changed it (``stream.pipeline.matchmaking``). Each
player's rating is kept next to his row: read when his ticket enters the copy (``stale`` marks
it), then re-read round robin, ``refresh`` players per tick (``stale_players``). Pure (numpy, no
I/O); rows are tombstoned on removal and compacted when the dead outnumber a quarter of the rows,
so positions stay put between a tick's ``flush`` and its ``set_ratings``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from .tickets import TicketColumns

Array = NDArray[np.float64]
Join = tuple[str, Sequence[str], float, Mapping[str, float] | None]
"""A joined ticket: (ticket id, its party's players, since, latencies)."""


def _empty_objects() -> NDArray[np.object_]:
    return np.zeros(0, dtype=object)


@dataclass
class PoolMirror:
    """The waiting tickets of one queue at ``version`` (module docstring): row ``i`` is ticket
    ``ticket_id[i]`` (live while ``alive[i]``), its party ``players[start[i]:start[i + 1]]``;
    ``mu`` / ``sigma`` / ``last_time`` per player (NaN: no rating), ``fresh`` whether it was read
    since the player's ticket entered."""

    version: int = 0
    ticket_id: NDArray[np.object_] = field(default_factory=_empty_objects)
    size: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    players: NDArray[np.object_] = field(default_factory=_empty_objects)
    since: Array = field(default_factory=lambda: np.zeros(0))
    latencies: list[Mapping[str, float] | None] = field(default_factory=list)
    alive: NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    mu: Array = field(default_factory=lambda: np.zeros(0))
    sigma: Array = field(default_factory=lambda: np.zeros(0))
    last_time: Array = field(default_factory=lambda: np.zeros(0))
    fresh: NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    row_of: dict[str, int] = field(default_factory=dict)
    joined: dict[str, Join] = field(default_factory=dict)
    """Tickets joined since the last :meth:`flush` (appended as rows by it)."""
    cursor: int = 0
    """Where the next round-robin slice of :meth:`stale_players` starts (a player position)."""

    @classmethod
    def load(cls, version: int, ticket_id: NDArray[np.object_], size: NDArray[np.int64], players: NDArray[np.object_],
             since: Array, latencies: Sequence[Mapping[str, float] | None] | None) -> "PoolMirror":
        """The pool as read in full at ``version``, its rows in creation order (joins arrive in
        about that order too, so a tick's sort by creation time finds the rows nearly sorted and
        costs little); no rating read yet."""
        n, count = int(size.size), int(players.size)
        order = np.argsort(since, kind="stable")
        size = size.astype(np.int64)[order]
        first = np.concatenate(([0], np.cumsum(size)))[:-1]
        old_first = (np.concatenate(([0], np.cumsum(size[np.argsort(order)])))[:-1])[order] if n else first
        flat = np.arange(count, dtype=np.int64) + np.repeat(old_first - first, size)
        ticket_id = ticket_id[order]
        lat = [latencies[i] for i in order.tolist()] if latencies is not None else [None] * n
        nan = np.full(count, np.nan)
        return cls(version, ticket_id, size, players[flat], since.astype(np.float64)[order], lat,
                   np.ones(n, dtype=bool), nan, nan.copy(), nan.copy(), np.zeros(count, dtype=bool),
                   dict(zip(ticket_id.tolist(), range(n))))

    @property
    def start(self) -> NDArray[np.int64]:
        """Row ``i``'s party is ``players[start[i]:start[i + 1]]``."""
        return np.concatenate(([0], np.cumsum(self.size))).astype(np.int64)

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
            keep = self.alive
            per_player = np.repeat(keep, self.size)
            rows = np.flatnonzero(keep)
            self.ticket_id, self.size, self.since = self.ticket_id[keep], self.size[keep], self.since[keep]
            self.latencies = [self.latencies[i] for i in rows.tolist()]
            self.players, self.fresh = self.players[per_player], self.fresh[per_player]
            self.mu, self.sigma, self.last_time = self.mu[per_player], self.sigma[per_player], self.last_time[per_player]
            self.alive = np.ones(rows.size, dtype=bool)
            self.row_of = dict(zip(self.ticket_id.tolist(), range(rows.size)))
            self.cursor = 0
        if not self.joined:
            return
        new = list(self.joined.values())
        self.joined = {}
        first = int(self.size.size)
        parties = [list(players) for _, players, _, _ in new]
        count = sum(map(len, parties))
        self.ticket_id = np.concatenate((self.ticket_id, np.array([t for t, _, _, _ in new], dtype=object)))
        self.size = np.concatenate((self.size, np.fromiter(map(len, parties), dtype=np.int64, count=len(new))))
        flat = np.empty(count, dtype=object)
        flat[:] = [p for party in parties for p in party]
        self.players = np.concatenate((self.players, flat))
        self.since = np.concatenate((self.since, np.array([s for _, _, s, _ in new], dtype=np.float64)))
        self.latencies += [lat for _, _, _, lat in new]
        self.alive = np.concatenate((self.alive, np.ones(len(new), dtype=bool)))
        nan = np.full(count, np.nan)
        self.mu, self.sigma, self.last_time = (np.concatenate((self.mu, nan)), np.concatenate((self.sigma, nan)),
                                               np.concatenate((self.last_time, nan)))
        self.fresh = np.concatenate((self.fresh, np.zeros(count, dtype=bool)))
        self.row_of.update(zip(self.ticket_id[first:].tolist(), range(first, first + len(new))))

    def stale_players(self, refresh: int) -> NDArray[np.int64]:
        """Positions of the live players whose rating to read now: every one not read since his
        ticket entered, and the next ``refresh`` live players round robin (all of them when at most
        ``refresh`` wait)."""
        live = np.flatnonzero(np.repeat(self.alive, self.size))
        if live.size <= refresh:
            return live
        at = int(np.searchsorted(live, self.cursor))
        turn = np.take(live, np.arange(at, at + refresh), mode="wrap")
        self.cursor = int(live[(at + refresh) % live.size])
        out: NDArray[np.int64] = np.union1d(turn, live[~self.fresh[live]])
        return out

    def set_ratings(self, positions: NDArray[np.int64], mu: Array, sigma: Array, last_time: Array) -> None:
        """The ratings read for ``positions`` (of :meth:`stale_players`)."""
        self.mu[positions], self.sigma[positions], self.last_time[positions] = mu, sigma, last_time
        self.fresh[positions] = True

    def columns(self) -> tuple[TicketColumns, Array]:
        """The live tickets as a tick takes them (mu and sigma as last read) and each player's
        ``last_time`` (for a new season's reset); call :meth:`flush` first."""
        keep = self.alive
        if keep.all():
            per_player = slice(None)
            latencies = self.latencies
        else:
            per_player = np.repeat(keep, self.size)  # type: ignore[assignment]
            latencies = [self.latencies[i] for i in np.flatnonzero(keep).tolist()] if any(self.latencies) else []
        tickets = TicketColumns(self.ticket_id[keep], self.size[keep], self.players[per_player], self.since[keep],
                                self.mu[per_player], self.sigma[per_player],
                                tuple(latencies) if any(latencies) else None)
        return tickets, self.last_time[per_player]
