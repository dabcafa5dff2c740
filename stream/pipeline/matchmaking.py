"""Matchmaking in the worker, as plain handlers (no Faust; the agents in ``agents.py`` call them).

* :func:`handle_tickets`: a batch of ``match-tickets`` messages (key = queue). Each is validated
  (``contracts.tickets``; bad ones go to ``match-tickets-dlq`` with their reason), then each
  queue's joins and cancels are applied in order in one round trip (``store.matchmaking``: a join
  is idempotent on its ticket id, refused while a player of the party waits in the queue or is in
  a match of it; a cancel is honoured while the ticket waits, else ``too_late``). It returns the
  tickets' lifecycle events (``ticket-events``) and dead letters; the agent sends them, awaits
  the broker's acknowledgement, then acks the input (a crash redelivers it: every step is
  idempotent; a redelivered ticket re-emits the event of its stored status).
* :func:`tick_queue`: one tick of one queue, run by the worker that owns the queue's partition of
  ``match-tickets`` every ``tick_interval_s`` (sequential per queue, parallel across queues and
  workers). It reads the pool's version, the matches in play and the outbox (one round trip),
  first re-sends what an earlier tick recorded but never saw acknowledged (the outbox), takes the
  waiting tickets from the worker's copy of the pool (below), forms matches with
  ``matchmaking.form_matches`` (the ladder's model), then ONE script commits them (each
  match only if all its tickets still wait) with the timeouts and puts their records (the Match
  on ``matches``, the tickets' ``matched`` / ``timed_out`` events) in the outbox; the records are
  sent (the Matches first, from the JSON just built, then the events) until acknowledged, then the
  outbox forgets them. Last (off the path from a ticket to its
  match) it releases the players of matches whose round is rated (``round_id`` = ``match_id``) or
  held MATCH_HOLD_S. A kill -9 at any step loses no ticket
  (the pool is in Redis until a commit takes it), books no player twice (the commit checks every
  ticket atomically) and never emits two different matches for one ticket; a match may be
  emitted twice with the same ``match_id`` and content (a crash after the send): consumers dedupe
  by ``match_id``.

The pool a tick sees: the worker keeps a copy of each queue's pool it ticks (``mm_copies``), to
which it applies the joins, cancels, matches and timeouts its own scripts wrote; the copy is used
while its version equals the pool's version in Redis (every script that changes the pool bumps
it), else (another writer, a start, a take-over) the tick re-reads the pool in full. The copy is
only a view: the commit still checks every ticket in Redis, so a stale copy can cost a dropped
match, never a double booking.

The ratings a tick uses: each waiting player's ``mu`` / ``sigma`` as stored when it was last read,
read at the first tick after his ticket entered the copy (a join, or a full read) and re-read round
robin, REFRESH_PLAYERS players per tick. With at most REFRESH_PLAYERS players waiting (5,000),
every tick reads every waiting player's current rating, as a tick always did; with more, a rating
is at most ceil(waiting / REFRESH_PLAYERS) ticks old (a player rated while he waits, by another
queue's match or a round sent directly, is seen within that; a player of this queue's matches is
not waiting while his match is in play and reads his new rating when he joins again). A new
season's soft reset is applied at every tick from the stored ``last_time``, as before.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import orjson

from stream.engine.seasons import next_round_view
from stream.contracts import DeadLetter
from stream.contracts.round import BAD_PARTY, RoundRejected
from stream.contracts.tickets import (CANCELLED, REJECTED, SEARCHING, TIMED_OUT, TOO_LATE, Match,
                                      TicketCancel, TicketEvent, TicketJoin, check_party, match_id,
                                      matched_events_json, parse_ticket)
from stream.matchmaking import QueueConfig, Ticket, TickResult, form_matches, ticket_problem
from stream.matchmaking.mirror import PoolMirror
from stream.pipeline import faults, metrics
from stream.pipeline.context import PipelineContext
from stream.pipeline.mm_copies import PoolCopies
from stream.pipeline.messages import Incoming, value_limit
from stream.pipeline.outbox import Outgoing, Send
from stream.store.matchmaking import (CommitMatch, CommitTimeout, Committed, MatchStore, Outcome,
                                      collector_paused)

log = logging.getLogger(__name__)

ROUND_DONE = frozenset({"rated", "no_outcome", "failed", "voided"})
"""Round statuses that end a match: its players may queue again."""
MATCHES_KIND = "matches"
EVENTS_KIND = "ticket-events"
REFRESH_PLAYERS = 5_000
"""Waiting players whose rating a tick re-reads, round robin, besides those who just joined (module
docstring): with up to this many waiting, every tick reads every rating."""


@dataclass(frozen=True)
class MatchTopicNames:
    """Full names of matchmaking's output topics."""

    matches: str
    ticket_events: str
    dlq: str


@dataclass
class Matchmaker:
    """Matchmaking's dependencies in one worker: the pipeline context (settings, store, ladders,
    queues), its topics, the pool's store, a clock (tests set it), where each queue's next check of
    its matches in play starts."""

    ctx: PipelineContext
    names: MatchTopicNames
    store: MatchStore
    clock: Callable[[], float] = time.time
    live_from: dict[str, int] = field(default_factory=dict)
    """Per queue, where the next tick's slice of the matches in play starts (``read_pool``)."""
    copies: PoolCopies = field(default_factory=PoolCopies)
    """The pools of the queues this worker ticks, kept in memory (``mm_copies``)."""

    @classmethod
    def of(cls, ctx: PipelineContext, names: MatchTopicNames) -> "Matchmaker":
        return cls(ctx, names, MatchStore(ctx.store))

    def topic(self, kind: str) -> str:
        return self.names.matches if kind == MATCHES_KIND else self.names.ticket_events


# ---- tickets ----------------------------------------------------------------------------------
def _dead_letter(mm: Matchmaker, event: Incoming, exc: RoundRejected, now: float) -> Outgoing:
    origin = event.origin
    letter = DeadLetter.from_rejection(exc, event.value, rejected_at=now, topic=origin.topic,
                                       partition=origin.partition, offset=origin.offset)
    value = letter.to_json(max_bytes=value_limit(mm.ctx.settings.max_message_bytes)).encode()
    return Outgoing(mm.names.dlq, event.key, value)


def dead_letter(mm: Matchmaker, event: Incoming, reason: str, message: str) -> Outgoing:
    """A ``match-tickets`` message set aside (e.g. ``internal_error``: its handling kept raising)."""
    metrics.MM_TICKETS.labels(_queue_label(event), "dead_lettered").inc()
    return _dead_letter(mm, event, RoundRejected(reason, message), mm.clock())


def _queue_label(event: Incoming) -> str:
    return event.key.decode("utf-8", "replace") if event.key else ""


def _validated(mm: Matchmaker, event: Incoming) -> TicketJoin | TicketCancel:
    ticket = parse_ticket(event.value, limits=mm.ctx.limits)
    queues = mm.ctx.queues
    check_party(ticket, queues={name: q.team_size for name, q in queues.items()})
    if isinstance(ticket, TicketJoin):
        problem = ticket_problem(queues[ticket.queue], Ticket(ticket.ticket_id, ticket.players, 0.0, ticket.latencies))
        if problem:
            raise RoundRejected(BAD_PARTY, problem, "players")
    return ticket


def _event(queue: str, ticket_id: str, status: dict[str, object], *, answer: str | None = None) -> TicketEvent:
    """A ticket's event from its stored status record (so a redelivered ticket re-emits the same
    content); ``answer`` overrides the status (``too_late`` for a cancel that lost the race)."""
    players = status.get("players")
    match = status.get("match_id")
    reason = status.get("reason")
    return TicketEvent(ticket_id, queue, answer or str(status["status"]), float(status.get("wait", 0.0) or 0.0),  # type: ignore[arg-type]
                       float(status["at"]), match if isinstance(match, str) else None,  # type: ignore[arg-type]
                       reason if isinstance(reason, str) else None, list(players) if isinstance(players, list) else [])


def _answer(queue: str, ticket: TicketJoin | TicketCancel, outcome: Outcome) -> TicketEvent:
    if isinstance(ticket, TicketCancel) and outcome.outcome == TOO_LATE and outcome.status.get("status") != CANCELLED:
        return _event(queue, ticket.ticket_id, outcome.status, answer=TOO_LATE)
    return _event(queue, ticket.ticket_id, outcome.status)


_OUTCOME_LABEL = {"new": "joined", "duplicate": "duplicate", "rejected": "rejected", "cancelled": "cancelled",
                  TOO_LATE: TOO_LATE}


async def handle_tickets(mm: Matchmaker, events: Sequence[Incoming]) -> list[Outgoing]:
    """Apply a batch of ``match-tickets`` messages (module docstring); the records to send."""
    now = mm.clock()
    out: list[Outgoing] = []
    per_queue: dict[str, list[TicketJoin | TicketCancel]] = {}
    for event in events:
        try:
            ticket = _validated(mm, event)
        except RoundRejected as exc:
            metrics.MM_TICKETS.labels(_queue_label(event), "dead_lettered").inc()
            out.append(_dead_letter(mm, event, exc, now))
            continue
        per_queue.setdefault(ticket.queue, []).append(ticket)
    hold_s = mm.ctx.settings.match_hold_s
    for queue, tickets in per_queue.items():
        ops = [("join", (t.ticket_id, t.players, now if t.created_at is None else min(t.created_at, now), t.latencies))
               if isinstance(t, TicketJoin) else ("cancel", t.ticket_id) for t in tickets]
        mm.copies.begin(queue)
        try:
            applied = await mm.store.apply(queue, ops, now=now, hold_s=hold_s)
        except BaseException:
            mm.copies.failed(queue)
            raise
        outcomes = applied.outcomes
        mm.copies.applied(queue, applied.before, applied.after,
                          joins=[arg for (_, arg), o in zip(ops, outcomes) if isinstance(arg, tuple) and o.outcome == "new"],
                          removed=[arg for (_, arg), o in zip(ops, outcomes)
                                   if isinstance(arg, str) and o.outcome == "cancelled"])
        for ticket, outcome in zip(tickets, outcomes):
            out.append(Outgoing(mm.names.ticket_events, queue.encode(), _answer(queue, ticket, outcome).to_json().encode()))
        for label, count in Counter(_OUTCOME_LABEL.get(o.outcome, o.outcome) for o in outcomes).items():
            metrics.MM_TICKETS.labels(queue, label).inc(count)  # once per outcome, not per ticket
    return out


# ---- ticks ------------------------------------------------------------------------------------
def _records(items: Sequence[tuple[str, str]]) -> bytes:
    """Outbox records: (kind, value JSON) pairs, kind ``matches`` or ``ticket-events``."""
    return orjson.dumps([list(item) for item in items])


def _outgoing(mm: Matchmaker, queue: str, raw: bytes) -> list[Outgoing]:
    return [Outgoing(mm.topic(kind), queue.encode(), value.encode()) for kind, value in orjson.loads(raw)]


def _sending(mm: Matchmaker, queue: str, matches: Sequence[tuple[str, list[str]]],
             timed_out: Sequence[str]) -> tuple[list[Outgoing], list[Outgoing]]:
    """A tick's committed records as messages, from the JSON the tick built (not decoded back from
    the outbox records): the Matches, and the tickets' events (sent once the Matches are)."""
    key, matches_topic, events_topic = queue.encode(), mm.names.matches, mm.names.ticket_events
    events = [Outgoing(events_topic, key, e.encode()) for _, jsons in matches for e in jsons]
    events += [Outgoing(events_topic, key, e.encode()) for e in timed_out]
    return [Outgoing(matches_topic, key, body.encode()) for body, _ in matches], events


@dataclass(frozen=True)
class TickReport:
    """What one tick did: matches committed, tickets timed out, matches released, records re-sent."""

    matches: list[Match]
    timed_out: list[str]
    released: list[str]
    resent: int


async def tick_queue(mm: Matchmaker, queue: QueueConfig, send: Send) -> TickReport:
    """One tick of ``queue`` (module docstring)."""
    started = time.perf_counter()
    store, settings, name = mm.store, mm.ctx.settings, queue.name
    live_from = mm.live_from.get(name, 0)
    view = await store.read_pool(name, live_from, tickets=False)
    mm.live_from[name] = live_from + len(view.live) if live_from + len(view.live) < view.in_play else 0
    if view.outbox:  # an earlier tick's records never acknowledged (a crash): the same bytes again
        await send([o for raw in view.outbox.values() for o in _outgoing(mm, name, raw)], "matchmaking outbox")
        await store.sent(name, list(view.outbox))
    now = mm.clock()
    copy = await _pool_copy(mm, name, view.version)
    stale = copy.stale_players(REFRESH_PLAYERS)
    if stale.size:
        copy.set_ratings(stale, *await store.ratings(queue.ladder, copy.tickets.players[stale].tolist()))
    pool, last_time = copy.columns()
    await mm.ctx.refresh_seasons()
    mu, sigma = next_round_view(mm.ctx.ladder(queue.ladder).params, pool.mu, pool.sigma, last_time, now)  # a new season's reset
    waiting = replace(pool, mu=mu, sigma=sigma)
    result = form_matches(queue, waiting, now, mm.ctx.ladder(queue.ladder))
    if len(result) or result.late.size:  # the crash points of a tick that has something to commit
        await faults.at(faults.MM_AFTER_FORM_BEFORE_COMMIT)
    with collector_paused():  # thousands of small acyclic objects, on the path from a ticket to its match
        flat, first = waiting.players.tolist(), waiting.start.tolist()
        commits, formed, bodies = _match_commits(name, queue.ladder, result, flat, first, now)
        timeouts, late_events = [], {}
        for i, tid, since in zip(result.late.tolist(), result.timed_out, waiting.created[result.late].tolist()):
            wait = max(0.0, now - since)
            late_events[tid] = TicketEvent(tid, name, TIMED_OUT, wait, now, None, None,
                                           flat[first[i]:first[i + 1]]).to_json()
            timeouts.append(CommitTimeout(tid, wait, _records([(EVENTS_KIND, late_events[tid])])))
    committed = await _commit(mm, name, commits, formed, timeouts, now) if commits or timeouts else None
    matches = [formed[m] for m in committed.matches] if committed else []
    timed_out = committed.timed_out if committed else []
    if committed is not None and (committed.matches or committed.timed_out):
        await faults.at(faults.MM_AFTER_COMMIT_BEFORE_SEND)
        entries = [*committed.matches, *(f"t:{t}" for t in committed.timed_out)]
        # the Matches alone first (a smaller request, acknowledged sooner: what players wait for), then
        # the tickets' events; the outbox forgets the entries only once both are acknowledged
        match_out, events_out = _sending(mm, name, [bodies[m] for m in committed.matches],
                                         [late_events[t] for t in committed.timed_out])
        if match_out:
            await send(match_out, "matches")
        await send(events_out, "ticket events")
        await faults.at(faults.MM_AFTER_SEND_BEFORE_MARK)
        await store.sent(name, entries)
    # after the send, off the path from a ticket to its match (a release only lets players join again)
    statuses = await store.round_statuses(queue.ladder, view.live)
    rated = [m for m, s in zip(view.live, statuses) if s in ROUND_DONE]
    released, expired = await store.release(name, rated, now=now, hold_s=settings.match_hold_s)
    _count(name, matches, len(timed_out), len(waiting) - sum(len(m.tickets) for m in matches) - len(timed_out),
           time.perf_counter() - started)
    if len(committed.matches if committed else []) < len(commits):
        log.info("queue %s: %d formed match(es) lost a race (a ticket left the pool) and were dropped", name,
                 len(commits) - len(matches))
    return TickReport(matches, timed_out, released + expired, len(view.outbox))


async def _pool_copy(mm: Matchmaker, queue: str, version: int) -> PoolMirror:
    """The worker's copy of the pool, current at ``version`` (the pool's, just read), its joins
    since the last tick appended: re-read in full when another writer changed the pool, at the
    first tick after a start or a take-over (``mm_copies``)."""
    copy = await mm.copies.current(queue, version)
    if copy is None:
        full = await mm.store.read_pool(queue, tickets=True)
        assert full.tickets is not None
        copy = mm.copies.load(queue, PoolMirror.load(full.version, full.tickets))
    copy.flush()
    return copy


async def _commit(mm: Matchmaker, queue: str, commits: list[CommitMatch], formed: dict[str, Match],
                  timeouts: list[CommitTimeout], now: float) -> Committed:
    """The tick's commit (``MatchStore.commit``), its tickets then out of the worker's copy too."""
    mm.copies.begin(queue)
    try:
        committed = await mm.store.commit(queue, commits, timeouts, now=now)
    except BaseException:
        mm.copies.failed(queue)
        raise
    gone = [t for m in committed.matches for t in formed[m].tickets] + committed.timed_out
    mm.copies.applied(queue, committed.before, committed.after, removed=gone)
    return committed


def _match_commits(queue: str, ladder: str, result: TickResult, players: list[str], first: list[int],
                   now: float) -> tuple[list[CommitMatch], dict[str, Match], dict[str, tuple[str, list[str]]]]:
    """Each formed match's Match, its tickets' ``matched`` events and what the commit records, and
    per match id its JSON and its events' JSON (sent as they are once committed);
    ``players[first[i]:first[i + 1]]``: ticket i's party."""
    commits: list[CommitMatch] = []
    formed: dict[str, Match] = {}
    bodies: dict[str, tuple[str, list[str]]] = {}
    tickets, ends = result.tickets.tolist(), result.start.tolist()
    for k, m in enumerate(result.matches):
        match = Match(match_id(queue, m.tickets), queue, ladder, [list(team) for team in m.teams], list(m.tickets),
                      m.quality, list(m.win_probability), dict(m.waits), now)
        waits = [match.waits[t] for t in match.tickets]
        jsons = matched_events_json(queue, match.match_id, now, match.tickets, waits,
                                    [players[first[i]:first[i + 1]] for i in tickets[ends[k]:ends[k + 1]]])
        body = match.to_json()
        records = _records([(MATCHES_KIND, body), *((EVENTS_KIND, e) for e in jsons)])
        formed[match.match_id] = match
        bodies[match.match_id] = (body, jsons)
        commits.append(CommitMatch(match.match_id, now, body, records, match.quality, match.tickets, waits,
                                   [p for team in match.teams for p in team]))
    return commits, formed, bodies


def _count(queue: str, matches: Sequence[Match], timed_out: int, waiting: int, seconds: float) -> None:
    metrics.MM_MATCHES.labels(queue).inc(len(matches))
    metrics.MM_TICKETS.labels(queue, "matched").inc(sum(len(m.tickets) for m in matches))
    metrics.MM_TICKETS.labels(queue, "timed_out").inc(timed_out)
    metrics.MM_WAITING.labels(queue).set(waiting)
    metrics.MM_TICK_SECONDS.labels(queue).observe(seconds)
    wait_hist, quality_hist = metrics.MM_WAIT_SECONDS.labels(queue), metrics.MM_QUALITY.labels(queue)
    for m in matches:
        quality_hist.observe(m.quality)
        for wait in m.waits.values():
            wait_hist.observe(wait)
