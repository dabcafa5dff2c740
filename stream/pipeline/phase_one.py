"""Phase one: validate a round, assign its ladder sequence, rate performances, fan out.

Plain async functions (no Kafka): the ``rounds`` agent calls :func:`handle_round` for each
message, in publish order per ladder, and sends what it returns. Steps (paper Section 4,
Algorithm 1, first half):

1. ``parse_round``; a bad message becomes a dead letter, an outcome-free round is recorded
   with status ``no_outcome`` and rates nobody.  A round with teams or partial play is
   dead-lettered ``teams_unsupported`` (``check_supported``): the stream rates individual
   full-time rounds only, for now (``stream replay --model trueskill`` rates teams).
2. Register the round id (Lua, once; while a correction holds the ladder, registration answers
   ``held`` and the round waits: ``hold.py``): a new id gets the ladder's next ``seq``; the same id
   with the same content is a duplicate (its stored fan-out is re-sent if it is still
   pending, since the first attempt may have crashed mid-send); different content is a
   ``conflict`` dead letter, the first round stands. Registration also enters the round in
   the sweeper's ledger (``sweeper.py``) with its canonical body, and reports the ladder's
   earlier rounds still ``registered`` (their phase one crashed or was lost): those are
   completed first, so a ``registered`` round's priors stay valid until it is completed.
3. Per-player barrier (``barrier.py``), then priors: stored (mu, sigma, last_time), the
   engine's newcomer prior for unseen players.
4. ``engine.phase_one``: every participant's performance (drift applied inside).
5. Mark the participants ``queued_seq = seq``, store the fan-out (one PlayerUpdate per
   partition of the ``player-updates`` topic, as its metadata counts them, by Kafka's murmur2
   partition of each player id; split in parts of at most MAX_MESSAGE_BYTES) and mark the round
   pending; then the caller sends exactly the stored messages.

A message whose phase one keeps raising is set aside by :func:`fail` (the agent calls it once
HANDLER_ATTEMPTS attempts failed): dead-lettered as ``internal_error``, its round ``failed``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np

from stream import engine
from stream.contracts import DeadLetter, PlayerUpdate, RoundRejected, RoundResult, parse_round
from stream.contracts.round import INDIVIDUALS_ONLY, INTERNAL_ERROR, NO_OUTCOME, STORED, check_supported, conflict
from stream.logsafe import log_safe
from stream.pipeline import faults
from stream.pipeline.barrier import wait_for_priors
from stream.pipeline.context import PipelineContext
from stream.pipeline.encoding import encode_update, number_texts
from stream.pipeline.hold import register_unless_held
from stream.pipeline.messages import FanOutMessage, value_limit
from stream.pipeline.partitioner import group_by_partition
from stream.pipeline.retry import TRANSIENT_ERRORS
from stream.store.store import (OUTCOME_CONFLICT, OUTCOME_NEW, STATUS_NO_OUTCOME, STATUS_PENDING,
                                STATUS_REGISTERED, Priors)

log = logging.getLogger(__name__)


@dataclass
class PhaseOneResult:
    """What to send for one input message, and what happened (for logs and metrics)."""

    outcome: str  # rated | resent | duplicate | no_outcome | rejected | failed | dropped (test fault)
    ladder: str | None = None
    round_id: str | None = None
    seq: int | None = None
    updates: list[FanOutMessage] = field(default_factory=list)
    dead_letter: DeadLetter | None = None


@dataclass(frozen=True)
class Origin:
    """Where the input message came from (copied into a dead letter)."""

    topic: str | None = None
    partition: int | None = None
    offset: int | None = None


async def handle_round(ctx: PipelineContext, raw: bytes, origin: Origin = Origin()) -> PhaseOneResult:
    """Phase one of one ``rounds`` message (see the module docstring)."""
    now = time.time()
    try:
        round_ = parse_round(raw, limits=ctx.limits)
        check_supported(round_, INDIVIDUALS_ONLY, "the stream")
    except RoundRejected as rejection:
        if rejection.reason == NO_OUTCOME and rejection.round is not None:
            return await _record_no_outcome(ctx, rejection.round, raw, now, origin)
        letter = DeadLetter.from_rejection(rejection, raw, rejected_at=now, topic=origin.topic,
                                           partition=origin.partition, offset=origin.offset)
        return PhaseOneResult("rejected", dead_letter=letter)
    if round_.is_outcome_free():
        return await _record_no_outcome(ctx, round_, raw, now, origin)

    store = ctx.store
    registration = await register_unless_held(ctx.settings, round_.ladder, lambda: store.register_round(
        round_.ladder, round_.round_id, content_hash=round_.content_hash(), occurred_at=round_.occurred_at,
        received_at=now, field_size=round_.field_size, body=raw,  # parses to round_ again
        due_at=now + ctx.settings.sweep_timeout_s, prefetch=round_.players(), perf_ceiling=round_.perf_ceiling))
    if registration.outcome == OUTCOME_CONFLICT:
        return _conflict(round_, raw, now, origin, registration.seq)
    result = PhaseOneResult("rated", round_.ladder, round_.round_id, registration.seq)
    for earlier in registration.earlier:  # an earlier round whose phase one never finished goes first
        await complete_registered(ctx, round_.ladder, earlier)
    if registration.outcome != OUTCOME_NEW and registration.status != STATUS_REGISTERED:
        if registration.status != STATUS_PENDING:
            result.outcome = "duplicate"
            return result
        result.outcome = "resent"
        result.updates = await stored_fanout(ctx, round_.ladder, round_.round_id)
        return result
    if faults.fires(ctx.settings, faults.DROP_ROUND_AFTER_REGISTER):
        result.outcome = "dropped"
        return result
    faults.crash_point(ctx.settings, faults.AFTER_REGISTER_BEFORE_FANOUT)
    # the priors read with the registration are the barrier's first read, unless earlier rounds
    # were completed since (they moved priors) or this is a redelivery
    first = registration.priors if registration.outcome == OUTCOME_NEW and not registration.earlier else None
    result.updates = await complete_round(ctx, round_, registration.seq, first=first)
    return result


async def complete_round(ctx: PipelineContext, round_: RoundResult, seq: int,
                         first: Priors | None = None) -> list[FanOutMessage]:
    """Phase one proper of a registered round: barrier, priors, performances, stored fan-out.

    Returns the messages to send: this attempt's, or those another attempt stored first (a
    redelivery or a sweeper racing it; both computed from the same priors). Valid only while
    the round is ``registered``: no later round of the ladder can have passed its barrier
    (each round first completes the earlier ones still registered, see ``handle_round``).
    """
    store = ctx.store
    players = round_.players()

    async def redrive(blocked: list[str]) -> None:
        await redrive_rounds(ctx, round_.ladder, blocked)

    priors = await wait_for_priors(store, ctx.settings, round_.ladder, players, seq,
                                   round_.round_id, redrive=redrive, first=first)
    newcomer = engine.PlayerState.new(ctx.params)
    mu = np.where(priors.known, priors.mu, newcomer.mu)
    sigma = np.where(priors.known, priors.sigma, newcomer.sigma)
    elapsed = engine.elapsed_days(priors.last_time, round_.occurred_at)
    performance = engine.phase_one(mu, sigma, elapsed, round_.ranks(), ctx.params,
                                   weight=round_.weight, perf_ceiling=round_.perf_ceiling)
    messages = build_fanout(ctx, round_, seq, performance, await ctx.partitions())

    faults.crash_point(ctx.settings, faults.AFTER_PRIORS_BEFORE_FANOUT_STORED)
    faults.raise_always(ctx.settings, faults.RAISE_ALWAYS_IN_PHASE_ONE, round_.round_id)
    saved = await store.queue_round(round_.ladder, round_.round_id, players, seq, pending=round_.field_size,
                                    messages=[(m.partition, m.value) for m in messages],
                                    due_at=time.time() + ctx.settings.sweep_timeout_s)
    faults.crash_point(ctx.settings, faults.AFTER_FANOUT_STORED_BEFORE_SEND)
    # if another attempt saved first (a redelivery or the sweeper racing this one), send what it stored
    return messages if saved else await stored_fanout(ctx, round_.ladder, round_.round_id)


async def complete_registered(ctx: PipelineContext, ladder: str, round_id: str) -> list[FanOutMessage]:
    """Finish the phase one of a round left ``registered`` (its input was lost or acked early)
    from the body stored at registration, and send its fan-out (``ctx.resend``) right away:
    later rounds' barriers wait for it. Returns the messages; nothing if it is past registered.

    The body is re-read under the contract's fixed rules only (``STORED``): limits tightened
    since it was accepted do not apply to it. If completing it raises unexpectedly a
    HANDLER_ATTEMPTS-th time in this worker, the round is failed and dead-lettered
    (``internal_error``, :func:`fail`) instead: it must not stall the ladder's later rounds."""
    body = await ctx.store.round_body(ladder, round_id)
    if body is None:
        return []
    try:
        round_ = parse_round(body, limits=STORED)
        record = await ctx.store.round_record(ladder, round_id)
        log.warning("completing phase one of round %s/%s (seq %s), left registered", log_safe(ladder),
                    log_safe(round_id), record.get("seq"))
        messages = await complete_round(ctx, round_, int(record["seq"]))
    except TRANSIENT_ERRORS:
        raise
    except Exception as exc:
        if not ctx.failed_attempt((ladder, round_id)):
            raise
        result = await fail(ctx, body, Origin(), exc)
        if ctx.reject is not None and result.dead_letter is not None:
            await ctx.reject(result.dead_letter)
        return []
    ctx.succeeded((ladder, round_id))
    if ctx.resend is not None:
        await ctx.resend(messages)
    return messages


async def fail(ctx: PipelineContext, raw: bytes, origin: Origin, error: BaseException) -> PhaseOneResult:
    """Set aside a message whose phase one kept raising ``error``: an ``internal_error`` dead
    letter naming the exception, and, if it is a round still ``registered``, the round marked
    ``failed`` (it rates nobody; the players it marked queued are released: store.fail_round)."""
    now = time.time()
    text = f"{type(error).__name__}: {error}"
    rejection = RoundRejected(INTERNAL_ERROR, f"handling the message kept raising {text[:500]}")
    letter = DeadLetter.from_rejection(rejection, raw, rejected_at=now, topic=origin.topic,
                                       partition=origin.partition, offset=origin.offset)
    result = PhaseOneResult("failed", dead_letter=letter)
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


def build_fanout(ctx: PipelineContext, round_: RoundResult, seq: int, performance: np.ndarray,
                 partitions: int) -> list[FanOutMessage]:
    """PlayerUpdates holding all of the round's players that map to each partition: one per
    partition, or several where one would exceed MAX_MESSAGE_BYTES (a huge round whose players
    hash to one partition), each then holding a contiguous part of that partition's players."""
    players = round_.players()
    ranks = round_.ranks()
    texts = number_texts("performance", performance)
    limit = value_limit(ctx.settings.max_message_bytes)

    def encode(index: list[int]) -> list[tuple[int, bytes]]:
        update = PlayerUpdate(
            ladder=round_.ladder, round_id=round_.round_id, seq=seq, occurred_at=round_.occurred_at,
            weight=round_.weight, field_size=round_.field_size,
            players=[players[i] for i in index], ranks=ranks[index].tolist(),
            performances=performance[index].tolist())
        value = encode_update(update, [texts[i] for i in index])  # = update.to_json().encode(), in bulk
        if len(value) <= limit or len(index) == 1:
            return [(index[0], value)]
        half = len(index) // 2
        return encode(index[:half]) + encode(index[half:])

    return [FanOutMessage(partition, players[first].encode(), value)
            for partition, index in sorted(group_by_partition(players, partitions).items())
            for first, value in encode(index)]


def _first_player(value: bytes) -> bytes:
    """The key of a stored fan-out message: its first entry's player id."""
    return PlayerUpdate.from_json(value).players[0].encode()


async def stored_fanout(ctx: PipelineContext, ladder: str, round_id: str) -> list[FanOutMessage]:
    """The fan-out stored for a round, as messages to (re-)send."""
    stored = await ctx.store.load_fanout(ladder, round_id)
    return [FanOutMessage(partition, _first_player(value), value) for partition, value in stored]


async def redrive_rounds(ctx: PipelineContext, ladder: str, blocked_players: list[str]) -> list[FanOutMessage]:
    """Stored fan-outs of the rounds the barrier waits on (the agent re-sends them)."""
    out: list[FanOutMessage] = []
    for round_id in await ctx.store.queued_rounds(ladder, blocked_players):
        out += await stored_fanout(ctx, ladder, round_id)
    if ctx.resend is not None:
        await ctx.resend(out)
    return out


async def _record_no_outcome(ctx: PipelineContext, round_: RoundResult, raw: bytes, now: float,
                             origin: Origin) -> PhaseOneResult:
    registration = await register_unless_held(ctx.settings, round_.ladder, lambda: ctx.store.register_round(
        round_.ladder, round_.round_id, content_hash=round_.content_hash(), occurred_at=round_.occurred_at,
        received_at=now, field_size=round_.field_size, status=STATUS_NO_OUTCOME))
    if registration.outcome == OUTCOME_CONFLICT:
        return _conflict(round_, raw, now, origin, registration.seq)
    return PhaseOneResult(NO_OUTCOME if registration.outcome == OUTCOME_NEW else "duplicate",
                          round_.ladder, round_.round_id, registration.seq)


def _conflict(round_: RoundResult, raw: bytes, now: float, origin: Origin, first_seq: int) -> PhaseOneResult:
    rejection = conflict(round_, first_seq)
    letter = DeadLetter.from_rejection(rejection, raw, rejected_at=now, topic=origin.topic,
                                       partition=origin.partition, offset=origin.offset)
    return PhaseOneResult("rejected", round_.ladder, round_.round_id, dead_letter=letter)

