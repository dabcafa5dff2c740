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

import numpy as np
from numpy.typing import NDArray

from stream.engine.ladders import LadderConfig
from stream.engine.predict import outcome_model

from .pairing import single_matches
from .parties import party_matches
from .pool import build_pool, region_passes
from .queues import QueueConfig
from .tickets import TicketColumns, TickResult, ticket_problem

Array = NDArray[np.float64]


def _check(queue: QueueConfig, waiting: TicketColumns) -> None:
    """ValueError naming the first bad ticket (:func:`ticket_problem`), a ticket id given twice or
    a player waiting in two tickets; vectorised checks first, the details only on a failure."""
    sizes, n = waiting.size, len(waiting)
    players = waiting.players.tolist()
    if ((n == 0 or (sizes.min() >= 1 and sizes.max() <= queue.team_size))
            and len(set(players)) == len(players) and len(set(waiting.ticket_id.tolist())) == n
            and waiting.latencies is None and bool(np.isfinite(waiting.created).all())):
        return
    seen_ids: set[str] = set()
    seen: set[str] = set()
    for i in range(n):
        t = waiting.ticket(i)
        problem = ticket_problem(queue, t)
        if problem:
            raise ValueError(f"ticket {t.ticket_id!r}: {problem}")
        if t.ticket_id in seen_ids:
            raise ValueError(f"ticket {t.ticket_id!r}: given twice")
        seen_ids.add(t.ticket_id)
        if seen.intersection(t.players):
            raise ValueError(f"ticket {t.ticket_id!r}: a player already waits in another ticket")
        seen.update(t.players)


def _order(waiting: TicketColumns) -> NDArray[np.int64]:
    """The tickets by creation time, equal times by ticket id: a tick's result does not depend on
    the order the pool was read in."""
    created = waiting.created
    order: NDArray[np.int64] = np.argsort(created, kind="stable")
    ordered = created[order]
    tied = np.concatenate(([False], ordered[1:] == ordered[:-1])) if created.size else np.zeros(0, dtype=bool)
    if tied.any():  # only the tickets sharing a creation time are ranked by id (a batch's joins do)
        tied[:-1] |= tied[1:]
        rank = np.zeros(created.size, dtype=np.int64)
        ties = order[tied]
        rank[ties[np.argsort(waiting.ticket_id[ties].astype(str), kind="stable")]] = np.arange(ties.size)
        order = np.lexsort((rank, created))
    return order


def form_matches(queue: QueueConfig, waiting: TicketColumns, now: float, ladder: LadderConfig) -> TickResult:
    """Form ``queue``'s matches from the ``waiting`` tickets at time ``now`` (module docstring); a
    player without a rating (NaN) is a newcomer of the ladder's model. Arrays in, arrays out.
    ValueError if a ticket is bad (:func:`ticket_problem`) or two tickets share an id or a player."""
    _check(queue, waiting)
    order = _order(waiting)
    over = now - waiting.created[order] > queue.max_wait_s
    late, live = order[over], order[~over]  # tickets of ``waiting``, by creation time
    noob = (ladder.newcomer.mu_noob, ladder.newcomer.sig_noob)
    pool = build_pool(queue, waiting, now, noob).take(live)  # the pool's ticket i is waiting's live[i]
    model = outcome_model(ladder)
    taken = np.zeros(live.size, dtype=bool)
    chosen: list[NDArray[np.int64]] = []
    teams: list[NDArray[np.int64]] = []
    counts: list[NDArray[np.int64]] = []
    qualities: list[Array] = []
    beats: list[Array] = []
    regions: list[str | None] = []
    width = max(queue.teams, 1)
    latencies = None if waiting.latencies is None else [waiting.latencies[i] for i in live.tolist()]
    for region, bucket in region_passes(queue, latencies, live.size) if live.size else []:
        bucket = bucket[~taken[bucket]]
        if queue.singles:
            members, quality, beat = single_matches(queue, pool, bucket, model)
            k, m = members.shape
            chosen.append(members.ravel())
            teams.append(np.tile(np.arange(m), k))
            counts.append(np.full(k, m, dtype=np.int64))
            taken[members.ravel()] = True
        else:
            lobbies = party_matches(queue, pool, bucket, waiting, live, noob, model)
            k = len(lobbies)
            chosen += [members for members, _, _, _ in lobbies]
            teams += [np.asarray(team_of, dtype=np.int64) for _, _, _, team_of in lobbies]
            counts.append(np.array([members.size for members, _, _, _ in lobbies], dtype=np.int64))
            quality = np.array([q for _, q, _, _ in lobbies], dtype=np.float64)
            beat = np.array([b for _, _, b, _ in lobbies], dtype=np.float64).reshape(k, width)
            for members, _, _, _ in lobbies:
                taken[members] = True
        qualities.append(quality)
        beats.append(beat.reshape(k, width))
        regions += [region] * k
    flat = np.concatenate(chosen).astype(np.int64) if chosen else np.zeros(0, dtype=np.int64)
    per_match = np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64)
    start = np.concatenate(([0], np.cumsum(per_match))).astype(np.int64)
    rating = pool.rating[flat]
    k = per_match.size
    gap = (np.maximum.reduceat(rating, start[:-1]) - np.minimum.reduceat(rating, start[:-1])) if k else np.zeros(0)
    return TickResult(waiting, now, live[flat], start, np.concatenate(teams).astype(np.int64) if teams else flat,
                      np.concatenate(qualities) if qualities else np.zeros(0),
                      np.concatenate(beats) if beats else np.zeros((0, width)), gap, tuple(regions), late)
