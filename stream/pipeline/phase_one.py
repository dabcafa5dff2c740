"""Phase one: validate a round, assign its ladder sequence, rate performances, fan out.

Plain async functions (no Kafka): the ``rounds`` agent calls :func:`handle_rounds` per batch of
messages and sends what it returns. One path: a message alone is a batch of one
(:func:`handle_one`), and a round left ``registered`` is completed by the same machinery
(:func:`complete_registered`). The steps (paper Section 4, Algorithm 1, first half) are
docs/design.md steps 2-4 and 8: parse and check support (a bad message is a dead letter, an
outcome-free round ``no_outcome``), register (Lua: seq, duplicate, ``conflict``, ``held`` by a
correction, ``late`` on a ladder rated by occurred_at), barrier and priors, one engine call per
ladder, then the stored fan-out, under the ladder's lease (``lease.py``). A message whose phase
one keeps raising is set aside by :func:`fail` (``internal_error``, its round ``failed``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from stream.batch.models import support
from stream.contracts import DeadLetter, PlayerUpdate, RoundRejected, RoundResult, parse_round
from stream.contracts.round import (INTERNAL_ERROR, NO_OUTCOME, STORED, check_supported, conflict,
                                    model_changed)
from stream.logsafe import log_ids, log_safe
from stream.pipeline import faults, rating_models
from stream.pipeline.barrier import RoundOvertaken, wait_for_priors
from stream.pipeline.context import PipelineContext
from stream.contracts.encoding import entry_texts, number_texts, update_head
from stream.pipeline.lease import Leases
from stream.pipeline.messages import (FORWARDED, FanOutMessage, Incoming, Origin, join_fanout, misrouted,
                                      partition_messages, value_limit)
from stream.pipeline.retry import TRANSIENT_ERRORS
from stream.pipeline.teams import fanout_columns, is_team_round, rate_ladder_rounds
from stream.engine.state import pack_batch, unpack_batch
from stream.contracts.correction import INSERT, Correction
from stream.store.store import (NEVER_DUE, OUTCOME_CONFLICT, SAVE_FENCED, SAVE_REFUSED, SAVED_NOW, Lease, OUTCOME_HELD, OUTCOME_LATE, OUTCOME_MODEL_CHANGED,
                                OUTCOME_NEW, OUTCOME_STALE_SCHEDULE,
                                STATUS_NO_OUTCOME, STATUS_PENDING, STATUS_REGISTERED, NewRound, QueuedRound,
                                Registration, Store)

log = logging.getLogger(__name__)


@dataclass
class PhaseOneResult:
    """What to send for one input message, and what happened (for logs and metrics)."""

    outcome: str  # rated | resent | duplicate | no_outcome | rejected | failed | forwarded | fenced | dropped (test fault)
    ladder: str | None = None
    round_id: str | None = None
    seq: int | None = None
    updates: list[FanOutMessage] = field(default_factory=list)
    dead_letter: DeadLetter | None = None
    insert: Correction | None = None
    """For a ``late`` round: the insert correction to publish (the ladder is held for it)."""


async def handle_one(ctx: PipelineContext, event: Incoming) -> PhaseOneResult:
    """:func:`handle_rounds` of a batch of one, again while it defers the message (every
    HOLD_POLL_S while its ladder is held; else up to ORDER_ATTEMPTS times)."""
    lost, waiting = 0, False
    while True:
        batch = await handle_rounds(ctx, [event])
        (result,) = batch.results
        if result is not None:
            result.updates = batch.messages
            return result
        if batch.on_hold:  # a correction holds the ladder: the round is registered once it is released
            if not waiting:
                log.info("ladder %s is held by a correction: its next round waits", log_ids(batch.on_hold))
            waiting = True
            await asyncio.sleep(ctx.settings.hold_poll_s)
            continue
        lost += 1
        if lost >= ORDER_ATTEMPTS:
            raise RuntimeError(f"phase one of offset {event.origin.offset} was deferred {ORDER_ATTEMPTS} times")


ORDER_ATTEMPTS = 3
"""How many times a round is rated again after save_fanout.lua refused it before the attempt raises."""


async def _complete(ctx: PipelineContext, round_: RoundResult, seq: int, leases: Leases) -> list[FanOutMessage]:
    """Phase one of a registered round as a batch of one (:func:`_rate_and_store`) under the
    caller's ``leases``, after the ladder's earlier ``registered`` rounds. Returns the messages to
    send: this attempt's or those another attempt stored first; none if fenced."""
    ladder, round_id = round_.ladder, round_.round_id
    item = _ToRate(-1, round_, seq, round_.players())
    for _ in range(ORDER_ATTEMPTS):
        await complete_before(ctx, ladder, seq, leases)
        outcome = await _rate_and_store(ctx, {ladder: [item]}, None, {}, set(), leases)
        if outcome.fenced:
            log.warning("round %s/%s: not stored, another attempt holds the ladder's lease", log_safe(ladder),
                        log_safe(round_id))
            return []
        (messages,) = outcome.messages
        if messages is not None:
            return messages
        (status,) = await ctx.store.round_statuses(ladder, [round_id])
        if status != STATUS_REGISTERED:  # another attempt stored it first (or it failed since)
            return await stored_fanout(ctx, ladder, round_id)
    raise RuntimeError(f"round {ladder}/{round_id} (seq {seq}): not stored after {ORDER_ATTEMPTS} attempts, an "
                       "earlier round of the ladder staying registered")


async def complete_before(ctx: PipelineContext, ladder: str, seq: int, leases: Leases) -> None:
    """Complete the ladder's rounds still ``registered`` below ``seq``, in seq order, under ``leases``."""
    for round_id in await ctx.store.registered_before(ladder, seq):
        await complete_registered(ctx, ladder, round_id, leases)


async def complete_registered(ctx: PipelineContext, ladder: str, round_id: str, leases: Leases) -> list[FanOutMessage]:
    """Finish a round left ``registered`` from its stored body (read under ``STORED`` limits) and
    send its fan-out at once (later rounds' barriers wait for it). A round that keeps raising is
    failed (:func:`fail`); one whose ladder's model changed is failed ``model_changed``."""
    body = await ctx.store.round_body(ladder, round_id)
    if body is None:
        return []
    try:
        round_ = parse_round(body, limits=STORED)
        stored_model = await ctx.store.ladder_model(ladder)
        if stored_model is not None and stored_model != ctx.ladder(ladder).model:
            await _fail_model_changed(ctx, round_, body, stored_model)
            return []
        record = await ctx.store.round_record(ladder, round_id)
        log.warning("completing phase one of round %s/%s (seq %s), left registered", log_safe(ladder),
                    log_safe(round_id), record.get("seq"))
        messages = await _complete(ctx, round_, int(record["seq"]), leases)
    except TRANSIENT_ERRORS:
        raise
    except Exception as exc:
        if not ctx.failed_attempt((ladder, round_id)):
            raise
        result = await fail(ctx, body, Origin(), exc)
        assert result.dead_letter is not None
        await ctx.outbox.reject(result.dead_letter)
        return []
    ctx.succeeded((ladder, round_id))
    await ctx.outbox.resend(messages)
    return messages


async def fail(ctx: PipelineContext, raw: bytes, origin: Origin, error: BaseException) -> PhaseOneResult:
    """Set aside a message whose phase one kept raising ``error``: an ``internal_error`` dead
    letter, and its round, if still ``registered``, marked ``failed`` (store.fail_round)."""
    text = f"{type(error).__name__}: {error}"
    rejection = RoundRejected(INTERNAL_ERROR, f"handling the message kept raising {text[:500]}")
    result = _rejected(rejection, raw, time.time(), origin, outcome="failed")
    try:
        try:
            round_ = parse_round(raw, limits=STORED)
        except RoundRejected as rejected:
            if rejected.round is None:
                return result
            round_ = rejected.round
        content_hash = round_.content_hash()
    except Exception:  # noqa: BLE001 - the message may be what makes parsing raise: nothing stored then
        return result
    result.ladder, result.round_id = round_.ladder, round_.round_id
    if await ctx.store.fail_round(round_.ladder, round_.round_id, content_hash=content_hash,
                                  reason=text[:500], players=round_.players()):
        log.error("round %r of ladder %r failed and set aside (%s)", round_.round_id, round_.ladder, text[:200])
    return result


def build_fanout(ctx: PipelineContext, round_: RoundResult, seq: int, performance: np.ndarray | list[str],
                 partitions: int, previous_seqs: list[int] | None = None,
                 ratings: tuple[list[str], list[str]] | None = None) -> list[FanOutMessage]:
    """A round's PlayerUpdates, one per partition (in parts where one would exceed MAX_MESSAGE_BYTES).
    ``performance``: values or their texts; ``previous_seqs``: each entry's (None: left out);
    ``ratings``: the (mu, sigma) texts of a rating-only model's round."""
    texts = performance if isinstance(performance, list) else number_texts("performance", performance)
    players = round_.players()
    entries = round_entries(round_, texts, previous_seqs, ratings)
    head = update_head(round_.ladder, round_.round_id, seq, round_.occurred_at, round_.weight, len(players))
    return partition_messages([head], entries, players, [0, len(players)], partitions,
                           value_limit(ctx.settings.max_message_bytes))[0]


def round_entries(round_: RoundResult, texts: Sequence[str], previous_seqs: Sequence[int] | None,
                  ratings: tuple[Sequence[str], Sequence[str]] | None) -> list[str]:
    """The JSON text of each of the round's fan-out entries, in standings order (as :func:`build_fanout`)."""
    teams, weights = fanout_columns(round_)  # None, None for a plain round
    weight_texts = None if weights is None else number_texts("weight", np.asarray(weights))
    return entry_texts(round_.players(), [s.rank for s in round_.standings], texts, previous_seqs, ratings, teams,
                       weight_texts)


async def stored_fanout(ctx: PipelineContext, ladder: str, round_id: str) -> list[FanOutMessage]:
    """The fan-out stored for a round, as messages to (re-)send."""
    stored = await ctx.store.load_fanout(ladder, round_id)
    return [FanOutMessage(partition, PlayerUpdate.from_json(value).players[0].encode(), value)  # key: first player
            for partition, value in stored]


def _model_changed(ctx: PipelineContext, round_: RoundResult, raw: bytes, now: float, origin: Origin,
                   stored: str) -> PhaseOneResult:
    """The ``model_changed`` dead letter of a round (logged once per ladder and stored model)."""
    rejection = model_changed(round_, stored, ctx.ladder(round_.ladder).model)
    if (round_.ladder, stored) not in ctx.model_conflicts:
        ctx.model_conflicts.add((round_.ladder, stored))
        log.error("%s: its rounds are dead-lettered (reason %s)", rejection.message, rejection.reason)
    return _rejected(rejection, raw, now, origin, round_)


async def _fail_model_changed(ctx: PipelineContext, round_: RoundResult, body: bytes, stored: str) -> None:
    """Fail a round left ``registered`` whose ladder's model changed, dead-lettered ``model_changed``."""
    result = _model_changed(ctx, round_, body, time.time(), Origin(), stored)
    assert result.dead_letter is not None
    await ctx.store.fail_round(round_.ladder, round_.round_id, content_hash=round_.content_hash(),
                               reason=result.dead_letter.message[:500], players=round_.players())
    await ctx.outbox.reject(result.dead_letter)


def _rejected(rejection: RoundRejected, raw: bytes, now: float, origin: Origin, round_: RoundResult | None = None,
              outcome: str = "rejected") -> PhaseOneResult:
    """The dead letter of the message ``raw`` read at ``origin``, as its result."""
    letter = DeadLetter.from_rejection(rejection, raw, rejected_at=now, topic=origin.topic,
                                       partition=origin.partition, offset=origin.offset)
    if round_ is None:
        return PhaseOneResult(outcome, dead_letter=letter)
    return PhaseOneResult(outcome, round_.ladder, round_.round_id, dead_letter=letter)



# ---- a batch of rounds as a unit (DESIGN15 "Phase one per batch") ----------------------------


@dataclass
class BatchResult:
    """Phase one of a batch: per message its result (None: deferred), the fan-out joined per
    partition, the messages to handle again as batches of one after it is sent, the held ladders."""

    results: list[PhaseOneResult | None]
    messages: list[FanOutMessage] = field(default_factory=list)
    deferred: list[int] = field(default_factory=list)
    on_hold: set[str] = field(default_factory=set)


@dataclass(slots=True)
class _ToRate:
    """A registered round to rate: its message's index (-1: completed from its stored body), seq, players."""

    index: int
    round_: RoundResult
    seq: int
    players: list[str]


@dataclass
class _Plan:
    """What registration decided for a batch."""

    to_rate: dict[str, list[_ToRate]] = field(default_factory=dict)
    resend: list[tuple[str, str]] = field(default_factory=list)
    earlier: dict[str, dict[str, None]] = field(default_factory=dict)
    deferred: list[int] = field(default_factory=list)
    held: set[str] = field(default_factory=set)
    """Ladders whose rounds of the batch wait: a correction's hold, or a ``stale_schedule``."""
    on_hold: set[str] = field(default_factory=set)
    """Ladders a correction holds (registration answered ``held``)."""
    stale_schedule: bool = False
    """A round was refused ``stale_schedule``: the schedule is read again before the deferred rounds."""


Columns = dict[str, np.ndarray | list[bytes | None]]


async def handle_rounds(ctx: PipelineContext, events: Sequence[Incoming]) -> BatchResult:
    """Phase one of a batch of ``rounds`` messages as a unit (paper Algorithm 1, first half, for
    many rounds; docs/design.md steps 3-4): ONE round trip registers every round and reads every
    participant's state (``Store.register_batch``, with the ladders' leases); earlier rounds left
    ``registered`` are completed first; per ladder the barrier, then ONE engine call over its
    rounds in seq order; ONE round trip stores every fan-out (``Store.queue_batch``). A round
    whose chain lost to another attempt (``SAVE_REFUSED``, ``RoundOvertaken``) is deferred, one
    whose ladder another attempt holds (or whose lease lapsed: ``SAVE_FENCED``) is ``fenced``.
    """
    await ctx.refresh_seasons()  # the seasons started since (SEASON_REFRESH_S)
    now = time.time()
    results: list[PhaseOneResult | None] = [None] * len(events)
    accepted: list[tuple[int, RoundResult, str]] = []
    for i, event in enumerate(events):
        verdict = _accept(ctx, event, now)
        if isinstance(verdict, PhaseOneResult):
            results[i] = verdict
        elif misrouted(event, verdict[0].ladder):  # the rounds_batches agent forwards it to its ladder's key
            results[i] = PhaseOneResult(FORWARDED, verdict[0].ladder, verdict[0].round_id)
        else:
            accepted.append((i, *verdict))
    participants = list(dict.fromkeys((r.ladder, p) for _, r, status in accepted if status == STATUS_REGISTERED
                                      for p in r.players()))
    due_at = now + ctx.settings.sweep_timeout_s
    ladders = {ladder: (ctx.ladder(ladder).model, ctx.ladder(ladder).digest, ctx.ladder_order.by_time(ladder),
                        ctx.schedule_version(ladder))
               for ladder in {r.ladder for _, r, _ in accepted}}
    leases = Leases(ctx.lease_owner, ctx.settings.phase_one_lease_ms)
    registrations, columns = await ctx.store.register_batch(
        [NewRound(r.ladder, r.round_id, r.content_hash(), r.occurred_at, now, r.field_size, status,
                  events[i].value if status == STATUS_REGISTERED else "", due_at if status == STATUS_REGISTERED else
                  NEVER_DUE, r.perf_ceiling, *ladders[r.ladder])
         for i, r, status in accepted], participants, lease=Lease(leases.owner, leases.ttl_ms))
    leases.tokens = {r.ladder: reg.fence for (_, r, _), reg in zip(accepted, registrations) if reg.fence}
    plan = await _plan(ctx, events, accepted, registrations, results)
    if plan.stale_schedule:  # a season started behind this worker's back: read now (its rounds are deferred)
        await ctx.refresh_seasons(force=True)
    _observe(ctx, accepted, registrations, plan.held)
    if plan.to_rate:
        await faults.at(faults.AFTER_REGISTER_BEFORE_FANOUT)
    # redelivered rounds already pending: their stored fan-out sent at once (later rounds' barriers may wait on it)
    await ctx.outbox.resend([m for ladder, round_id in plan.resend for m in await stored_fanout(ctx, ladder, round_id)])
    late = await leases.take(ctx.store, [*plan.to_rate, *plan.earlier], ctx.settings.hold_poll_s)
    stale = await _complete_earlier(ctx, plan.earlier, leases) | late  # late: the holder may have stored since
    stored = await _rate_and_store(ctx, plan.to_rate, columns, {key: i for i, key in enumerate(participants)}, stale,
                                   leases, release=True)
    for after in stored.posteriors:  # kept once stored; a ladder another attempt stored a round of keeps none
        if after.ladder in stored.unsaved:
            ctx.posteriors.drop(after.ladder)
        elif after.states:
            ctx.posteriors.keep(after.ladder, after.players, after.last, after.states)
    if stored.fenced:  # another attempt holds their ladder's lease: its rounds, nothing sent here
        log.warning("%d round(s) of the batch not rated here: another attempt holds their ladder's lease",
                    len(stored.fenced))
    for item in stored.fenced:
        if (fenced := results[item.index]) is not None:
            fenced.outcome, fenced.updates = "fenced", []
    sections: list[FanOutMessage] = []
    for item, messages in zip(stored.items, stored.messages):
        if messages is None:  # not stored from this attempt's chain: handled again as a batch of one (handle_one)
            results[item.index] = None
            plan.deferred.append(item.index)
            continue
        result = results[item.index]
        if result is not None:
            result.updates = messages
        sections += messages
    return BatchResult(results, join_fanout(sections, value_limit(ctx.settings.max_message_bytes)),
                       sorted(plan.deferred), plan.on_hold)


@dataclass
class _Stored:
    """What :func:`_rate_and_store` did: per round rated its messages (None: its chain lost), the
    rounds ``fenced``, the ladders' posteriors and the ladders not wholly stored here."""

    items: list[_ToRate] = field(default_factory=list)
    messages: list[list[FanOutMessage] | None] = field(default_factory=list)
    fenced: list[_ToRate] = field(default_factory=list)
    posteriors: list[_Posteriors] = field(default_factory=list)
    unsaved: set[str] = field(default_factory=set)


async def _rate_and_store(ctx: PipelineContext, to_rate: dict[str, list[_ToRate]], columns: Columns | None,
                          row: dict[tuple[str, str], int], stale: set[str], leases: Leases, *,
                          release: bool = False) -> _Stored:
    """Rate each ladder's rounds (:func:`_rate_ladder`) under ``leases`` and store them all in ONE
    round trip (``Store.queue_batch``, save_fanout.lua: a round is stored only if the one before
    it in the chain was stored by this attempt). ``columns``, ``row``: the players' state read
    with the registration (None, or a ladder in ``stale``: read again). ``release``: give the
    leases up in the store's round trip."""
    out = _Stored()
    queued: list[QueuedRound] = []
    rated: list[tuple[_ToRate, list[FanOutMessage]]] = []
    partitions = await ctx.outbox.partition_count() if to_rate else 0
    token = os.urandom(8).hex()  # this attempt's: each stored round records it (``stored_by``)
    for ladder, rounds in to_rate.items():
        await leases.renew_if_due(ctx.store)
        if not leases.token(ladder):  # another attempt holds the ladder's lease: its rounds are its own
            out.fenced += rounds
            continue
        rounds.sort(key=lambda r: r.seq)
        try:
            fanouts, after = await _rate_ladder(ctx, ladder, rounds, None if ladder in stale else columns, row,
                                                partitions)
        except RoundOvertaken as overtaken:  # another attempt rated a round of the ladder: not ours now
            log.warning("%s: the ladder's rounds here are handled again", overtaken)
            ctx.posteriors.drop(ladder)
            out.items += rounds
            out.messages += [None] * len(rounds)
            continue
        out.posteriors.append(after)
        due_at = time.time() + ctx.settings.sweep_timeout_s
        previous: str | None = None  # the chain: each round is stored only if the one before it was, by us
        for item, messages in zip(rounds, fanouts):
            queued.append(QueuedRound(ladder, item.round_.round_id, item.players, item.seq, len(item.players),
                                      [(m.partition, m.value) for m in messages], due_at, token, previous,
                                      leases.token(ladder)))
            previous = item.round_.round_id
            rated.append((item, messages))
    if not rated:
        if release:
            await ctx.store.release_leases(list(leases.tokens), leases.owner)
        return out
    await faults.at(faults.AFTER_PRIORS_BEFORE_FANOUT_STORED, rounds=[item.round_.round_id for item, _ in rated])
    await faults.at(faults.IN_BATCH_STORE, store=ctx.store, queued=queued)
    saved = await ctx.store.queue_batch(queued, release=(leases.owner, list(leases.tokens)) if release else None)
    out.unsaved = {item.round_.ladder for (item, _), code in zip(rated, saved) if code != SAVED_NOW}
    ctx.health.score_due()  # the rounds kept by _rate_ladder (health.py); the timer records them
    await faults.at(faults.AFTER_FANOUT_STORED_BEFORE_SEND)
    refused = 0
    for (item, messages), code in zip(rated, saved):
        if code == SAVE_FENCED:  # the lease lapsed and another attempt took it: its round now
            out.fenced.append(item)
            continue
        out.items.append(item)
        if code == SAVE_REFUSED:  # computed from a chain that lost: handled again
            refused += 1
            out.messages.append(None)
        else:  # another attempt (a redelivery, the sweeper) stored first: send what it stored
            out.messages.append(messages if code == SAVED_NOW else
                                await stored_fanout(ctx, item.round_.ladder, item.round_.round_id))
    if refused:
        log.warning("%d round(s) not stored (an earlier round of the ladder was stored by another attempt, or is "
                    "still registered): handled again", refused)
    return out


def _accept(ctx: PipelineContext, event: Incoming, now: float) -> PhaseOneResult | tuple[RoundResult, str]:
    """A dead-letter result, or the round with the status to register it with."""
    origin = event.origin
    try:
        round_ = parse_round(event.value, limits=ctx.limits)
        check_supported(round_, support(ctx.ladder(round_.ladder).model), "the stream")
    except RoundRejected as rejection:
        if rejection.reason == NO_OUTCOME and rejection.round is not None:
            return rejection.round, STATUS_NO_OUTCOME
        return _rejected(rejection, event.value, now, origin)
    # parse_round rejects a round of fewer than two entries (``no_outcome``, above); a draw is
    # outcome-free where the ladder's model does not rate draws
    if round_.is_outcome_free(ctx.ladder(round_.ladder).draws_rate):
        return round_, STATUS_NO_OUTCOME
    return round_, STATUS_REGISTERED


async def _plan(ctx: PipelineContext, events: Sequence[Incoming], accepted: list[tuple[int, RoundResult, str]],
          registrations: list[Registration], results: list[PhaseOneResult | None]) -> _Plan:
    """Each registered message's outcome and the batch's plan. A round twice in the batch is rated
    once (the later copy ``resent``). A ladder's rounds from a ``held``, ``late``, ``stale_schedule``
    or dropped (test fault DROP_ROUND_AFTER_REGISTER) one on are deferred, each a batch of one."""
    plan = _Plan()
    rating: set[tuple[str, str]] = set()
    earlier: dict[str, tuple[str, ...]] = {}  # per ladder the longest ``earlier`` of its rounds to rate
    cut: set[str] = set()
    held = plan.held
    for (i, round_, status), reg in zip(accepted, registrations):
        event = events[i]
        if reg.outcome in (OUTCOME_HELD, OUTCOME_STALE_SCHEDULE) or round_.ladder in held:
            # a correction holds the ladder: this round and the ladder's later ones (held too:
            # the hold outlasts the batch) wait for it, each a batch of one (``handle_one``);
            # a stale schedule: the ladder's rounds from this one on, registered again with the new one
            plan.stale_schedule |= reg.outcome == OUTCOME_STALE_SCHEDULE
            if reg.outcome == OUTCOME_HELD:
                plan.on_hold.add(round_.ladder)
            held.add(round_.ladder)
            plan.deferred.append(i)
            continue
        if reg.outcome == OUTCOME_CONFLICT:
            results[i] = _rejected(conflict(round_, reg.seq), event.value, time.time(), event.origin, round_)
            continue
        if reg.outcome == OUTCOME_MODEL_CHANGED:
            results[i] = _model_changed(ctx, round_, event.value, time.time(), event.origin, reg.status)
            continue
        if reg.outcome == OUTCOME_LATE:  # the ladder is held for its insert from now on
            insert = Correction(INSERT, round_.ladder, round_.round_id, reg.status)  # corrections.py rates it
            results[i] = PhaseOneResult("late", round_.ladder, round_.round_id, reg.seq, insert=insert)
            held.add(round_.ladder)
            continue
        if status == STATUS_NO_OUTCOME:
            results[i] = PhaseOneResult(NO_OUTCOME if reg.outcome == OUTCOME_NEW else "duplicate",
                                        round_.ladder, round_.round_id, reg.seq)
            continue
        key = (round_.ladder, round_.round_id)
        if round_.ladder in cut:
            plan.deferred.append(i)
            continue
        result = results[i] = PhaseOneResult("rated", round_.ladder, round_.round_id, reg.seq)
        if key in rating:
            result.outcome = "resent"
        elif reg.outcome != OUTCOME_NEW and reg.status != STATUS_REGISTERED:
            result.outcome = "resent" if reg.status == STATUS_PENDING else "duplicate"
            if reg.status == STATUS_PENDING and key not in plan.resend:  # a round twice: re-sent once
                plan.resend.append(key)
        elif await faults.at(faults.DROP_ROUND_AFTER_REGISTER):
            result.outcome = "dropped"
            cut.add(round_.ladder)
        else:
            rating.add(key)
            plan.to_rate.setdefault(round_.ladder, []).append(_ToRate(i, round_, reg.seq, round_.players()))
            if len(reg.earlier) >= len(earlier.get(round_.ladder, ())):
                earlier[round_.ladder] = reg.earlier
    # a ladder's registrations list its rounds still registered below their seq, read once after
    # the batch's registrations (``Store.register_batch``): each list is a prefix of the longest
    for ladder, ids in earlier.items():
        plan.earlier[ladder] = {r: None for r in ids if (ladder, r) not in rating}
    return plan


async def _complete_earlier(ctx: PipelineContext, earlier: dict[str, dict[str, None]], leases: Leases) -> set[str]:
    """Complete the ladders' rounds left ``registered`` before the batch (held ladders only);
    returns the ladders whose state read with the registration is stale now."""
    stale: set[str] = set()
    for ladder, round_ids in earlier.items():
        for round_id in round_ids if leases.token(ladder) else ():
            await complete_registered(ctx, ladder, round_id, leases)
            stale.add(ladder)
    return stale


@dataclass(frozen=True)
class _Posteriors:
    """A ladder's players after the batch: each one's last seq and packed state (empty: not kept)."""

    ladder: str
    players: list[str]
    last: np.ndarray
    states: list[bytes]


def _observe(ctx: PipelineContext, accepted: list[tuple[int, RoundResult, str]], registrations: list[Registration],
             held: set[str]) -> None:
    """Tell the posterior cache what the registration saw of each ladder (``posteriors.py``)."""
    ladders: dict[str, list[int]] = {}
    counters: dict[str, int] = {}
    for (_, round_, _), reg in zip(accepted, registrations):
        new = ladders.setdefault(round_.ladder, [])
        if reg.outcome == OUTCOME_NEW:
            new.append(reg.seq)
        if reg.outcome != OUTCOME_HELD:
            counters[round_.ladder] = reg.corrections
    for ladder, new in ladders.items():
        if ladder in held or ladder not in counters:
            ctx.posteriors.drop(ladder)
        else:
            ctx.posteriors.observe(ladder, corrections=counters[ladder], new_seqs=new)


async def _rate_ladder(ctx: PipelineContext, ladder: str, rounds: list[_ToRate], columns: Columns | None,
                       row: dict[tuple[str, str], int], partitions: int,
                       ) -> tuple[list[list[FanOutMessage]], _Posteriors]:
    """Barrier, then ONE engine call over a ladder's rounds of the batch (in seq order): per round
    its fan-out, and the players' posteriors. ``columns``: the state read with the registration
    (None: read again)."""
    flat = [p for item in rounds for p in item.players]  # every participation, round by round
    position = {p: i for i, p in enumerate(dict.fromkeys(flat))}
    players = list(position)
    sizes = np.fromiter((len(item.players) for item in rounds), dtype=np.int64, count=len(rounds))
    offsets = np.zeros(len(rounds) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    bounds = offsets.tolist()
    all_rows = np.fromiter(map(position.__getitem__, flat), dtype=np.int64, count=len(flat))
    members = [all_rows[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    seqs = np.repeat(np.fromiter((item.seq for item in rounds), dtype=np.int64, count=len(rounds)), sizes)
    # each player's first round of the batch: rows are numbered by first participation, so a
    # participation is its player's first where its row exceeds every row before it
    opens = np.ones(len(flat), dtype=bool)
    opens[1:] = all_rows[1:] > np.maximum.accumulate(all_rows)[:-1]
    first_seq = seqs[opens]
    if columns is None:
        first = await ctx.store.load_priors(ladder, players, first_seq, states=True)
    else:
        rows = [row[(ladder, p)] for p in players]  # the players' rows of the registration's read
        index = np.asarray(rows, dtype=np.int64)
        first = Store.priors(players, {name: column[index] if isinstance(column, np.ndarray) else
                                       [column[i] for i in rows] for name, column in columns.items()}, first_seq)
    ctx.posteriors.fill(ladder, players, first)

    async def redrive(blocked: list[str]) -> None:  # re-send the stored fan-outs of the rounds the barrier waits on
        await ctx.outbox.resend([m for round_id in await ctx.store.queued_rounds(ladder, blocked)
                                 for m in await stored_fanout(ctx, ladder, round_id)])

    priors = await wait_for_priors(ctx.store, ctx.settings, ladder, players, first_seq, rounds[0].round_.round_id,
                                   redrive=redrive, first=first, states=True)
    assert priors.states is not None and priors.last_seq is not None
    cfg = ctx.ladder(ladder)
    ratings: tuple[list[str], list[str]] | None = None
    plain = not any(is_team_round(item.round_) for item in rounds)  # no teams, no partial play
    if cfg.rating_model is not None:
        modelled = rating_models.rate_rounds(cfg, priors.states, members, [item.round_ for item in rounds])
        performance, previous_row = modelled.performance, modelled.previous  # offsets: the batch's
        ratings = number_texts("mu_after", modelled.mu), number_texts("sigma_after", modelled.sigma)
    else:
        prior = unpack_batch(priors.states, cfg.elo_mmr)
        update = rate_ladder_rounds(prior, [item.round_ for item in rounds], members, cfg.elo_mmr, plain=plain)
        if not update.rated.all():
            raise ValueError("an outcome-free round reached the engine")
        ctx.health.score(ladder, cfg.elo_mmr, [item.round_ for item in rounds], [item.seq for item in rounds], prior,
                         all_rows, offsets, flat, update)  # rating health, before the updates (health.py)
        performance, previous_row = update.performance, update.previous
    previous_seq = np.where(previous_row >= 0, seqs[np.maximum(previous_row, 0)], priors.last_seq[all_rows])
    texts, previous = number_texts("performance", performance), previous_seq.tolist()
    if ratings is None and plain:  # every entry of the batch rendered in one pass
        entries = entry_texts(flat, [s.rank for item in rounds for s in item.round_.standings], texts, previous)
    else:
        entries = [entry for item, a, b in zip(rounds, bounds[:-1], bounds[1:])
                   for entry in round_entries(item.round_, texts[a:b], previous[a:b],
                                              None if ratings is None else (ratings[0][a:b], ratings[1][a:b]))]
    heads = [update_head(r.round_.ladder, r.round_.round_id, r.seq, r.round_.occurred_at, r.round_.weight,
                         len(r.players)) for r in rounds]
    fanouts = partition_messages(heads, entries, flat, bounds, partitions, value_limit(ctx.settings.max_message_bytes))
    last = np.zeros(len(players), dtype=np.int64)
    np.maximum.at(last, all_rows, seqs)  # each player's last round of the batch
    # Elo-MMR ladders keep their posteriors (the states phase two will store); a rating-only
    # model's ladder keeps none: its players wait at the barrier
    keep = cfg.rating_model is None and ctx.posteriors.worth_keeping(len(players))
    states = pack_batch(update.after) if keep else []
    return fanouts, _Posteriors(ladder, players, last, states)
