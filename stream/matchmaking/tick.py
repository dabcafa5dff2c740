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
from stream.engine.predict import outcome_model

from .pairing import single_matches
from .parties import party_matches
from .pool import Pool, build_pool, region_passes
from .queues import QueueConfig
from .tickets import FormedMatch, Ticket, TickResult, ticket_problem

Array = NDArray[np.float64]


def _check(queue: QueueConfig, tickets: Sequence[Ticket]) -> None:
    """ValueError naming the first bad ticket (:func:`ticket_problem`), a ticket id given twice or
    a player waiting in two tickets; vectorised checks first, the details only on a failure."""
    sizes = np.fromiter((len(t.players) for t in tickets), dtype=np.int64, count=len(tickets))
    players = [p for t in tickets for p in t.players]
    created = np.fromiter((t.created_at for t in tickets), dtype=np.float64, count=len(tickets))
    if ((sizes.size == 0 or (sizes.min() >= 1 and sizes.max() <= queue.team_size))
            and len(set(players)) == len(players) and len({t.ticket_id for t in tickets}) == len(tickets)
            and all(t.latencies is None for t in tickets) and bool(np.isfinite(created).all())):
        return
    seen_ids: set[str] = set()
    seen: set[str] = set()
    for t in tickets:
        problem = ticket_problem(queue, t)
        if problem:
            raise ValueError(f"ticket {t.ticket_id!r}: {problem}")
        if t.ticket_id in seen_ids:
            raise ValueError(f"ticket {t.ticket_id!r}: given twice")
        seen_ids.add(t.ticket_id)
        if seen.intersection(t.players):
            raise ValueError(f"ticket {t.ticket_id!r}: a player already waits in another ticket")
        seen.update(t.players)


def _single(live: list[Ticket], pool: Pool, members: NDArray[np.int64], quality: Array, beats: Array,
            region: str | None) -> list[FormedMatch]:
    """The FormedMatch of each row of ``members`` (single-player tickets), built column by column
    (a duel tick that empties a pool of 100,000 builds 50,000 of them: BENCHMARKS.md)."""
    cols = members.T.tolist()
    ids = list(zip(*([live[i].ticket_id for i in col] for col in cols)))
    teams = list(zip(*([live[i].players for i in col] for col in cols)))
    waits = zip(*(pool.wait[col].tolist() for col in members.T))
    gaps = (pool.rating[members[:, -1]] - pool.rating[members[:, 0]]).tolist()
    return [FormedMatch(i, t, q, b, dict(zip(i, w)), region, g)
            for i, t, q, b, w, g in zip(ids, teams, quality.tolist(), map(tuple, beats.tolist()), waits, gaps)]


def _party(queue: QueueConfig, live: list[Ticket], pool: Pool, members: NDArray[np.int64], quality: float,
           beats: Array, team_of: tuple[int, ...], region: str | None) -> FormedMatch:
    chosen = [live[i] for i in members.tolist()]
    count = max(queue.teams, 1)
    teams = tuple(tuple(p for t, team in zip(chosen, team_of) if team == k for p in t.players) for k in range(count))
    return FormedMatch(
        tickets=tuple(t.ticket_id for t in chosen), teams=teams, quality=quality,
        win_probability=tuple(beats.tolist()), waits={t.ticket_id: w for t, w in zip(chosen, pool.wait[members].tolist())},
        region=region, gap=float(pool.rating[members].max() - pool.rating[members].min()))


def form_matches(queue: QueueConfig, tickets: Sequence[Ticket], ratings: Mapping[str, tuple[float, float]],
                 now: float, ladder: LadderConfig) -> TickResult:
    """Form ``queue``'s matches from the waiting ``tickets`` at time ``now`` (module docstring).
    ``ratings``: (mu, sigma) per player; a player absent is a newcomer of the ladder's model.
    ValueError if a ticket is bad (:func:`ticket_problem`) or two tickets share an id or a player."""
    _check(queue, tickets)
    created = np.fromiter((t.created_at for t in tickets), dtype=np.float64, count=len(tickets))
    ordered = [tickets[i] for i in np.argsort(created, kind="stable").tolist()]
    if np.unique(created).size < created.size:  # equal times: the ticket id breaks the tie
        ordered.sort(key=lambda t: (t.created_at, t.ticket_id))
    late = (now - np.sort(created) > queue.max_wait_s).tolist()
    timed_out = [t.ticket_id for t, x in zip(ordered, late) if x]
    live = [t for t, x in zip(ordered, late) if not x]
    if not live:
        return TickResult([], timed_out)
    noob = (ladder.newcomer.mu_noob, ladder.newcomer.sig_noob)
    pool = build_pool(queue, live, ratings, now, noob)
    model = outcome_model(ladder)
    taken = np.zeros(len(live), dtype=bool)
    matches: list[FormedMatch] = []
    for region, bucket in region_passes(queue, live):
        bucket = bucket[~taken[bucket]]
        if queue.singles:
            members, quality, beats = single_matches(queue, pool, bucket, model)
            taken[members.ravel()] = True
            matches.extend(_single(live, pool, members, quality, beats, region))
            continue
        players = [t.players for t in live]
        for members, q, b, team_of in party_matches(queue, pool, bucket, players, ratings, noob, model):
            taken[members] = True
            matches.append(_party(queue, live, pool, members, q, b, team_of, region))
    return TickResult(matches, timed_out)
