"""Matches of teams with parties (team_size > 1): a bounded search, parties kept whole.

From each free ticket in rating order, the lobby takes the following free tickets (at most
``LOOKAHEAD`` x players looked at) that fit a team and keep the rating spread within the most
lenient tolerance, until every team is full (a bounded greedy fill). The teams are then balanced:
parties packed largest first, each into the team of least total rating with room, then up to
``SWAPS`` swaps of equal-sized parties between the strongest and the weakest team while that
narrows the gap between them (FlexMatch's balanced strategy, teiserver's balancers); with equal
team sizes, equal rating totals are equal team beliefs, hence win probabilities near 1/2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from stream.engine.predict import OutcomeModel
from stream.engine.teams import team_beliefs

from .odds import lobby_odds
from .pool import Pool
from .queues import QueueConfig
from .tickets import TicketColumns
from .tolerance import combine

LOOKAHEAD = 4
"""Tickets looked at per lobby at most: LOOKAHEAD x players per match."""
SWAPS = 16
"""Balancing swaps per lobby at most."""


@dataclass(frozen=True)
class Lobby:
    """Tickets (pool indices) and each one's team."""

    tickets: tuple[int, ...]
    team_of: tuple[int, ...]


def _pack(sizes: list[int], ratings: list[float], teams: int, team_size: int) -> list[int] | None:
    """Parties largest (then strongest) first, each into the weakest team with room; None if a
    party finds no room."""
    order = sorted(range(len(sizes)), key=lambda i: (-sizes[i], -ratings[i], i))
    room = [team_size] * teams
    total = [0.0] * teams
    team_of = [-1] * len(sizes)
    for i in order:
        fits = [t for t in range(teams) if room[t] >= sizes[i]]
        if not fits:
            return None
        t = min(fits, key=lambda t: (total[t], t))
        team_of[i] = t
        room[t] -= sizes[i]
        total[t] += ratings[i] * sizes[i]
    return team_of


def _swap(sizes: list[int], ratings: list[float], team_of: list[int], teams: int) -> list[int]:
    """Up to SWAPS swaps of equal-sized parties between the strongest and weakest teams."""
    team_of = list(team_of)
    for _ in range(SWAPS):
        total = [0.0] * teams
        for i, t in enumerate(team_of):
            total[t] += ratings[i] * sizes[i]
        hi = max(range(teams), key=lambda t: (total[t], -t))
        lo = min(range(teams), key=lambda t: (total[t], t))
        gap = total[hi] - total[lo]
        best, pair = gap, None
        for a in (i for i, t in enumerate(team_of) if t == hi):
            for b in (j for j, t in enumerate(team_of) if t == lo and sizes[j] == sizes[a]):
                delta = (ratings[a] - ratings[b]) * sizes[a]
                new = abs(gap - 2 * delta)
                if new < best - 1e-9:
                    best, pair = new, (a, b)
        if pair is None:
            break
        team_of[pair[0]], team_of[pair[1]] = lo, hi
    return team_of


def fill_lobbies(queue: QueueConfig, sizes: NDArray[np.int64], rating: NDArray[np.float64],
                 gap_tol: NDArray[np.float64]) -> list[Lobby]:
    """Lobbies over pool tickets already sorted by rating (module docstring)."""
    n = rating.size
    used = np.zeros(n, dtype=bool)
    need = queue.players
    limit = LOOKAHEAD * need
    size_l, rating_l, gap_l = sizes.tolist(), rating.tolist(), gap_tol.tolist()
    top = queue.top_rating
    lobbies: list[Lobby] = []
    for s in range(n):
        if used[s]:
            continue
        members, first = [s], [0]
        room, filled, widest = [queue.team_size] * queue.teams, size_l[s], gap_l[s]
        room[0] -= size_l[s]
        j = s + 1
        while filled < need and j < n and j - s <= limit:
            if not used[j]:
                allowed = max(widest, gap_l[j])
                if top is not None and rating_l[j] >= top:
                    allowed = min(allowed, queue.top_max_gap)
                t = max(range(queue.teams), key=lambda t: (room[t], -t))
                if rating_l[j] - rating_l[s] <= allowed and room[t] >= size_l[j]:
                    members.append(j)
                    first.append(t)
                    room[t] -= size_l[j]
                    filled += size_l[j]
                    widest = max(widest, gap_l[j])
            j += 1
        if filled < need:
            continue
        sizes_m = [size_l[i] for i in members]
        ratings_m = [rating_l[i] for i in members]
        team_of = _pack(sizes_m, ratings_m, queue.teams, queue.team_size) or first
        team_of = _swap(sizes_m, ratings_m, team_of, queue.teams)
        used[members] = True
        lobbies.append(Lobby(tuple(members), tuple(team_of)))
    return lobbies


def party_matches(queue: QueueConfig, pool: Pool, idx: NDArray[np.int64], waiting: TicketColumns,
                  live: NDArray[np.int64], noob: tuple[float, float],
                  model: OutcomeModel) -> list[tuple[NDArray[np.int64], float, NDArray[np.float64], tuple[int, ...]]]:
    """The matches of the pool's tickets ``idx`` (pool ticket i is ``waiting``'s ``live[i]``):
    (tickets, quality, each team's mean P(ahead) of the others, each ticket's team). The
    participants of the quality are the teams (each its members' belief, as ``predict_teams``), or
    the players of a one-team lobby (a free-for-all of its members)."""
    if int(pool.size[idx].sum()) < queue.players:
        return []
    idx = pool.by_rating(idx)
    lobbies = fill_lobbies(queue, pool.size[idx], pool.rating[idx], pool.gap_tol[idx])
    if not lobbies:
        return []
    k = len(lobbies)
    width = queue.teams if queue.teams > 1 else queue.team_size
    new = np.isnan(waiting.mu) | np.isnan(waiting.sigma)
    player_mu, player_sigma = np.where(new, noob[0], waiting.mu), np.where(new, noob[1], waiting.sigma)
    tickets = [idx[list(lobby.tickets)] for lobby in lobbies]
    every = np.concatenate(tickets)  # every lobby's tickets, lobby after lobby: one pass over them all
    rows = waiting.player_rows(live[every])
    if queue.teams > 1:  # every lobby's teams in one team_beliefs call: group lobby * teams + team
        group = np.repeat(np.arange(k), [t.size for t in tickets]) * queue.teams + \
            np.concatenate([np.asarray(lobby.team_of, dtype=np.int64) for lobby in lobbies])
        entry = np.repeat(group, pool.size[every])
        team_mu, team_sigma = team_beliefs(player_mu[rows], player_sigma[rows], entry, np.ones(entry.size),
                                           k * queue.teams)
        mu, sigma = team_mu.reshape(k, width), team_sigma.reshape(k, width)
    else:  # a one-team lobby holds exactly team_size players
        mu, sigma = player_mu[rows].reshape(k, width), player_sigma[rows].reshape(k, width)
    quality, beats = lobby_odds(mu, sigma, model)
    if queue.teams == 1:
        beats = np.ones((k, 1))
    width_t = max(t.size for t in tickets)
    gaps, quals = np.full((k, width_t), -np.inf), np.full((k, width_t), np.inf)
    top = np.zeros(k)
    for r, t in enumerate(tickets):
        gaps[r, : t.size], quals[r, : t.size], top[r] = pool.gap_tol[t], pool.q_tol[t], pool.rating[t].max()
    _, q_w = combine(queue, gaps, quals, top)
    return [(tickets[r], float(quality[r]), beats[r], lobbies[r].team_of) for r in range(k) if quality[r] >= q_w[r]]
