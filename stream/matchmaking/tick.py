"""One matchmaking tick: the waiting tickets of a queue in, the matches formed and the tickets
timed out back. Pure and deterministic (the same inputs give the same matches, in the same
order): the service re-runs a tick after a crash and relies on it.

A tick sorts the pool by rating (a party's rating is its mean member's mu, its sigma
``sqrt(mean sigma^2)``: the team belief of ``stream.engine.teams.team_beliefs``), forms the
matches of single players by neighbours (:mod:`.pairing`) or of parties by a bounded fill
(:mod:`.parties`), and keeps those within the tolerance in force (:mod:`.tolerance`): rating
spread and the ladder's match quality (:mod:`.odds`, the ``/predict`` maths). With a region rule
the pool is split by each ticket's best region first, then every region takes the leftovers that
reach it within ``max_latency_ms``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from stream.engine.ladders import LadderConfig
from stream.engine.predict import OutcomeModel, outcome_model

from .odds import lobby_odds
from .pairing import choose_pairs, choose_windows
from .parties import fill_lobbies
from .queues import QueueConfig
from .tolerance import combine, ticket_tolerances

Array = NDArray[np.float64]
PAIR_BUDGET = 4_000_000
"""Player pairs whose odds a tick computes for every candidate window before choosing (beyond it,
large lobbies are chosen by rating spread first and checked for quality after)."""


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


@dataclass(frozen=True)
class _Pool:
    """The live tickets as arrays, in (created_at, ticket_id) order."""

    tickets: list[Ticket]
    rating: Array
    sigma: Array
    max_sigma: Array
    wait: Array
    created: Array
    size: NDArray[np.int64]
    gap_tol: Array
    q_tol: Array


def _pool(queue: QueueConfig, live: list[Ticket], ratings: Mapping[str, tuple[float, float]],
          now: float, ladder: LadderConfig) -> _Pool:
    noob = (ladder.newcomer.mu_noob, ladder.newcomer.sig_noob)
    size = np.fromiter((len(t.players) for t in live), dtype=np.int64, count=len(live))
    owner = np.repeat(np.arange(len(live)), size)
    rated = np.array([ratings.get(p, noob) for t in live for p in t.players], dtype=np.float64).reshape(-1, 2)
    n = len(live)
    rating = np.bincount(owner, weights=rated[:, 0], minlength=n) / np.maximum(size, 1)
    sigma = np.sqrt(np.bincount(owner, weights=rated[:, 1] ** 2, minlength=n) / np.maximum(size, 1))
    max_sigma = np.zeros(n)
    np.maximum.at(max_sigma, owner, rated[:, 1])
    created = np.fromiter((t.created_at for t in live), dtype=np.float64, count=n)
    wait = np.maximum(now - created, 0.0)
    gap_tol, q_tol = ticket_tolerances(queue, wait, max_sigma)
    return _Pool(live, rating, sigma, max_sigma, wait, created, size, gap_tol, q_tol)


def _passes(queue: QueueConfig, live: list[Ticket]) -> list[tuple[str | None, NDArray[np.int64]]]:
    """The pool's buckets, in order: by best region, then each region's reachable leftovers."""
    everyone = np.arange(len(live), dtype=np.int64)
    limit = queue.max_latency_ms
    if limit is None:
        return [(None, everyone)]
    reach: list[set[str] | None] = []
    best: list[str | None] = []
    for t in live:
        if not t.latencies:
            reach.append(None)
            best.append(None)
            continue
        ok = {r: ms for r, ms in t.latencies.items() if ms <= limit}
        reach.append(set(ok))
        best.append(min(ok, key=lambda r: (ok[r], r)) if ok else "")
    out: list[tuple[str | None, NDArray[np.int64]]] = []
    firsts = sorted({b for b in best if b}, key=str)
    for region in firsts:
        out.append((region, np.array([i for i, b in enumerate(best) if b == region], dtype=np.int64)))
    out.append((None, np.array([i for i, b in enumerate(best) if b is None], dtype=np.int64)))
    for region in sorted({r for s in reach if s for r in s}):
        out.append((region, np.array([i for i, s in enumerate(reach) if s is None or region in s], dtype=np.int64)))
    return out


def _singles(queue: QueueConfig, pool: _Pool, idx: NDArray[np.int64],
             model: OutcomeModel) -> list[tuple[NDArray[np.int64], float, Array]]:
    """(tickets in rating order, quality, each one's mean P(ahead)) of the matches formed."""
    m = queue.players
    if idx.size < m:
        return []
    idx = idx[np.lexsort((idx, pool.created[idx], pool.rating[idx]))]
    rating, sigma = pool.rating[idx], pool.sigma[idx]
    windows = np.lib.stride_tricks.sliding_window_view(np.arange(idx.size), m)
    gaps = pool.gap_tol[idx][windows]
    quals = pool.q_tol[idx][windows]
    gap_w, q_w = combine(queue, gaps, quals, rating[m - 1:])
    spread = rating[m - 1:] - rating[: idx.size - m + 1]
    ok = spread <= gap_w
    cand = np.flatnonzero(ok)
    if cand.size * m * (m - 1) // 2 <= PAIR_BUDGET:
        quality, beats = lobby_odds(rating[windows[cand]], sigma[windows[cand]], model)
        good = quality >= q_w[cand]
        ok[:] = False
        ok[cand[good]] = True
        starts = choose_pairs(ok, pool.created[idx]) if m == 2 else choose_windows(ok, m)
        where = np.searchsorted(cand, starts)
        quality, beats = quality[where], beats[where]
    else:
        starts = choose_windows(ok, m)
        quality, beats = lobby_odds(rating[windows[starts]], sigma[windows[starts]], model)
        good = quality >= q_w[starts]
        starts, quality, beats = starts[good], quality[good], beats[good]
    return [(idx[windows[s]], float(q), b) for s, q, b in zip(starts.tolist(), quality.tolist(), beats)]


def _parties(queue: QueueConfig, pool: _Pool, idx: NDArray[np.int64], live: list[Ticket],
             ratings: Mapping[str, tuple[float, float]], noob: tuple[float, float],
             model: OutcomeModel) -> list[tuple[NDArray[np.int64], float, Array, tuple[int, ...]]]:
    """(tickets in rating order, quality, each team's mean P(ahead), each ticket's team)."""
    if int(pool.size[idx].sum()) < queue.players:
        return []
    idx = idx[np.lexsort((idx, pool.created[idx], pool.rating[idx]))]
    lobbies = fill_lobbies(queue, pool.size[idx], pool.rating[idx], pool.gap_tol[idx])
    if not lobbies:
        return []
    k = len(lobbies)
    width = queue.teams if queue.teams > 1 else queue.team_size
    mu, sigma = np.zeros((k, width)), np.zeros((k, width))
    for r, lobby in enumerate(lobbies):
        if queue.teams > 1:  # participants: the teams, each its members' belief
            members = [[] for _ in range(queue.teams)]  # type: list[list[tuple[float, float]]]
            for pos, team in zip(lobby.tickets, lobby.team_of):
                members[team].extend(ratings.get(p, noob) for p in live[idx[pos]].players)
            for team, rows in enumerate(members):
                values = np.asarray(rows)
                mu[r, team] = values[:, 0].mean()
                sigma[r, team] = values[:, 1] if len(rows) == 1 else np.sqrt((values[:, 1] ** 2).mean())
        else:  # one lobby: a free-for-all of its players
            rows = [ratings.get(p, noob) for pos in lobby.tickets for p in live[idx[pos]].players]
            mu[r], sigma[r] = np.asarray(rows).T
    quality, beats = lobby_odds(mu, sigma, model)
    tickets = [idx[list(lobby.tickets)] for lobby in lobbies]
    gaps = np.full((k, max(len(t) for t in tickets)), -np.inf)
    quals = np.full(gaps.shape, np.inf)
    top = np.zeros(k)
    for r, t in enumerate(tickets):
        gaps[r, : t.size], quals[r, : t.size], top[r] = pool.gap_tol[t], pool.q_tol[t], pool.rating[t].max()
    _, q_w = combine(queue, gaps, quals, top)
    if queue.teams == 1:
        beats = np.ones((k, 1))
    return [(tickets[r], float(quality[r]), beats[r], lobbies[r].team_of)
            for r in range(k) if quality[r] >= q_w[r]]


def form_matches(queue: QueueConfig, tickets: Sequence[Ticket], ratings: Mapping[str, tuple[float, float]],
                 now: float, ladder: LadderConfig) -> TickResult:
    """Form ``queue``'s matches from the waiting ``tickets`` at time ``now`` (module docstring).
    ``ratings``: (mu, sigma) per player; a player absent is a newcomer of the ladder's model.
    ValueError if a ticket is bad (:func:`ticket_problem`) or two tickets share an id or a player."""
    ids: set[str] = set()
    seen: set[str] = set()
    for t in tickets:
        problem = ticket_problem(queue, t)
        if problem:
            raise ValueError(f"ticket {t.ticket_id!r}: {problem}")
        if t.ticket_id in ids:
            raise ValueError(f"ticket {t.ticket_id!r}: given twice")
        ids.add(t.ticket_id)
        if seen.intersection(t.players):
            raise ValueError(f"ticket {t.ticket_id!r}: a player already waits in another ticket")
        seen.update(t.players)
    ordered = sorted(tickets, key=lambda t: (t.created_at, t.ticket_id))
    timed_out = [t.ticket_id for t in ordered if now - t.created_at > queue.max_wait_s]
    live = [t for t in ordered if now - t.created_at <= queue.max_wait_s]
    if not live:
        return TickResult([], timed_out)
    pool = _pool(queue, live, ratings, now, ladder)
    model = outcome_model(ladder)
    noob = (ladder.newcomer.mu_noob, ladder.newcomer.sig_noob)
    taken = np.zeros(len(live), dtype=bool)
    matches: list[FormedMatch] = []
    for region, bucket in _passes(queue, live):
        bucket = bucket[~taken[bucket]]
        if queue.singles:
            for members, quality, beats in _singles(queue, pool, bucket, model):
                taken[members] = True
                chosen = [live[i] for i in members.tolist()]
                matches.append(FormedMatch(
                    tickets=tuple(t.ticket_id for t in chosen),
                    teams=tuple(t.players for t in chosen),
                    quality=quality,
                    win_probability=tuple(beats.tolist()),
                    waits={t.ticket_id: float(now - t.created_at) for t in chosen},
                    region=region,
                    gap=float(pool.rating[members[-1]] - pool.rating[members[0]]),
                ))
        else:
            for members, quality, beats, team_of in _parties(queue, pool, bucket, live, ratings, noob, model):
                taken[members] = True
                chosen = [live[i] for i in members.tolist()]
                size = queue.teams if queue.teams > 1 else 1
                teams = tuple(tuple(p for t, team in zip(chosen, team_of) if team == k for p in t.players)
                              for k in range(size))
                matches.append(FormedMatch(
                    tickets=tuple(t.ticket_id for t in chosen),
                    teams=teams,
                    quality=quality,
                    win_probability=tuple(beats.tolist()),
                    waits={t.ticket_id: float(now - t.created_at) for t in chosen},
                    region=region,
                    gap=float(pool.rating[members].max() - pool.rating[members].min()),
                ))
    return TickResult(matches, timed_out)
