"""The ``player-updates`` agent's work on one batch of messages, without Faust: phase two
(``phase_two.handle_updates``), its fallbacks, dead letters, events and confirmations.

A message with a section that is not a PlayerUpdate goes whole to ``rounds-dlq``
(``bad_player_update``) once its batch raises; a forged section is dead-lettered alone
(``unverified_player_update``). A batch that still gives up after HANDLER_ATTEMPTS is handled
section by section; a section that keeps raising is dead-lettered (``internal_error``), its
players released and its round voided by a correction (:func:`release_update`).
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from stream.contracts import PlayerUpdate, validate
from stream.contracts.correction import VOID, Correction
from stream.contracts.round import BAD_PLAYER_UPDATE, INTERNAL_ERROR, UNVERIFIED_PLAYER_UPDATE
from stream.pipeline import faults, metrics, retry
from stream.pipeline.context import PipelineContext
from stream.pipeline.messages import Incoming, split_sections
from stream.pipeline.outbox import Outgoing, Send, TopicNames, change_messages, repair_messages, update_letter
from stream.pipeline.phase_two import PhaseTwoResult, handle_updates
from stream.pipeline.retry import TRANSIENT_ERRORS, GaveUp, retrying
from stream.store import corrections as ledger

log = logging.getLogger(__name__)


async def phase_two_batch(ctx: PipelineContext, names: TopicNames, events: Sequence[Incoming], send: Send) -> None:
    """Phase two of a batch of ``player-updates`` messages: :func:`apply_updates`, then :func:`emit_applied`."""
    await emit_applied(ctx, names, await apply_updates(ctx, names, events), send)


@dataclass
class Applied:
    """A phase-two batch applied to Redis (:func:`apply_updates`), its events not sent yet."""

    events: int
    result: PhaseTwoResult
    rejected: list[Outgoing]
    started: float


async def apply_updates(ctx: PipelineContext, names: TopicNames, events: Sequence[Incoming]) -> Applied:
    """Apply the batch (retried; section by section if it keeps raising) for :func:`emit_applied`."""
    settings = ctx.settings
    started = time.perf_counter()
    rejected: list[Outgoing] = []
    try:
        result = await retrying(lambda: handle_player_updates(ctx, names, events, rejected), "phase two",
                                max_delay_s=settings.retry_max_delay_s, handler=retry.PHASE_TWO,
                                attempts=settings.handler_attempts)
    except GaveUp as gave_up:
        result = await handle_one_by_one(ctx, names, events, rejected, gave_up.error)
    await faults.at(faults.PHASE_TWO_AFTER_REDIS_BEFORE_EMIT)
    return Applied(len(events), result, rejected, started)


async def emit_applied(ctx: PipelineContext, names: TopicNames, applied: Applied, send: Send) -> None:
    """Send the applied batch's events and dead letters (until acknowledged), then confirm them."""
    settings = ctx.settings
    result, rejected = applied.result, applied.rejected
    handled = time.perf_counter()
    _log_rejected(rejected)
    await send(change_messages(names, result.events) + rejected + repair_messages(names, result.repairs),
               "rating changes")
    emitted = result.emitted  # (ladder, round_id, players) whose events were just sent
    await retrying(lambda: ctx.store.confirm_emitted(emitted), "confirming emitted events",
                   max_delay_s=settings.retry_max_delay_s, handler=retry.CONFIRM)
    await faults.at(faults.PHASE_TWO_AFTER_EMIT_BEFORE_ACK)
    metrics.UPDATES_APPLIED.inc(result.applied)
    metrics.UPDATES_RE_EMITTED.inc(result.replayed)
    metrics.UPDATES_GAP.inc(result.gaps)
    metrics.PHASE_TWO_SECONDS.observe(time.perf_counter() - applied.started)
    log.debug("phase two: %d message(s), %d applied, %d re-emitted, %d gap(s), %.3fs (%.3fs sending)", applied.events,
              result.applied, result.replayed, result.gaps, time.perf_counter() - applied.started,
              time.perf_counter() - handled)


def _log_rejected(rejected: Sequence[Outgoing]) -> None:
    """Count the dead letters by reason; log the unusual ones."""
    if not rejected:
        return
    reasons = Counter(json.loads(m.value)["reason"] for m in rejected)
    for reason, n in reasons.items():
        metrics.ROUNDS_REJECTED.labels(reason).inc(n)
    unverified = reasons.pop(UNVERIFIED_PLAYER_UPDATE, 0)
    if unverified:
        log.error("%d player-updates section(s) are not in their round's stored fan-out: not applied, "
                  "sent to the DLQ (%s)", unverified, UNVERIFIED_PLAYER_UPDATE)
    if reasons:
        log.error("%d player-updates message(s) or section(s) are not PlayerUpdates or kept raising: sent to the DLQ",
                  sum(reasons.values()))


def malformed_update(raw: bytes) -> str | None:
    """Why the message ``raw`` is not one or more PlayerUpdate sections, or None if it is."""
    sections = split_sections(raw)
    for k, section in enumerate(sections):
        try:
            validate("player-update", section)
        except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON (or too deep), or SchemaError
            where = f" (section {k + 1} of {len(sections)})" if len(sections) > 1 else ""
            return f"not a PlayerUpdate: {type(exc).__name__}: {exc}{where}"
    return None


def dead_letters(names: TopicNames, events: Sequence[Incoming], max_bytes: int,
                 values: Sequence[bytes] | None = None) -> dict[int, Outgoing]:
    """Index in ``events`` → dead letter (whole, as read) of every message with a malformed section.
    ``values``: what was handled of each event (default: its value)."""
    out: dict[int, Outgoing] = {}
    for i, event in enumerate(events):
        value = event.value if values is None else values[i]
        why = malformed_update(value)
        if why is not None:
            out[i] = update_letter(names, max_bytes, event, BAD_PLAYER_UPDATE, why, value)
    return out


async def handle_player_updates(ctx: PipelineContext, names: TopicNames, events: Sequence[Incoming],
                                rejected: list[Outgoing], values: Sequence[bytes] | None = None) -> PhaseTwoResult:
    """``handle_updates`` of a batch; only if it raises are the messages checked for malformed ones
    (put in ``rejected``, the rest handled; none: re-raised). ``values``: what to handle of each event."""
    raws = [event.value for event in events] if values is None else list(values)
    handled = list(events)
    rejected.clear()  # this attempt's dead letters only
    try:
        result = await handle_updates(ctx, raws)
    except TRANSIENT_ERRORS:
        raise
    except Exception:
        letters = dead_letters(names, events, ctx.settings.max_message_bytes, raws)
        if not letters:
            raise
        rejected[:] = letters.values()
        handled = [event for i, event in enumerate(events) if i not in letters]
        raws = [raw for i, raw in enumerate(raws) if i not in letters]
        result = await handle_updates(ctx, raws) if handled else PhaseTwoResult([], 0, 0)
    rejected += [update_letter(names, ctx.settings.max_message_bytes, handled[i], UNVERIFIED_PLAYER_UPDATE, why,
                               section) for (i, why), section in zip(result.unverified, result.unverified_sections)]
    await faults.at(faults.RAISE_IN_PHASE_TWO)
    return result


async def release_update(ctx: PipelineContext, raw: bytes, why: str) -> Correction:
    """The players of a dead-lettered section skip its round (``last_seq`` moved up to it), the round
    is ``failed``, and voided by the returned correction (later rounds phase one rated from its
    posteriors are re-rated without it); the ladder is held for it at once."""
    update = PlayerUpdate.from_json(raw)
    await ctx.store.release_queued(update.ladder, update.players, update.seq)
    await ctx.store.fail_pending_round(update.ladder, update.round_id, seq=update.seq, reason=why)
    repair = Correction(VOID, update.ladder, update.round_id, f"repair/{update.seq}/{update.round_id}"[:200],
                        reason=f"phase two gave up: {why}"[:500])  # the same id whichever section failed
    await ledger.hold(ctx.store, update.ladder, repair.correction_id, now=time.time())
    return repair


async def handle_one_by_one(ctx: PipelineContext, names: TopicNames, events: Sequence[Incoming],
                            rejected: list[Outgoing], error: Exception) -> PhaseTwoResult:
    """A batch that gave up, handled section by section: a malformed message is dead-lettered whole,
    a section that still raises alone (``internal_error``) and its players released."""
    settings = ctx.settings
    merged = PhaseTwoResult([], 0, 0)
    rejected.clear()
    malformed = dead_letters(names, events, settings.max_message_bytes)
    rejected += malformed.values()
    for event, section in ((e, section) for i, e in enumerate(events) if i not in malformed
                           for section in split_sections(e.value)):
        part: list[Outgoing] = []
        try:
            one = await retrying(lambda: handle_player_updates(ctx, names, [event], part, [section]),
                                 "phase two of one section", max_delay_s=settings.retry_max_delay_s,
                                 handler=retry.PHASE_TWO, attempts=settings.handler_attempts)
        except GaveUp as gave_up:
            why = f"handling the message kept raising {type(gave_up.error).__name__}: {gave_up.error}"[:600]
            rejected.append(update_letter(names, settings.max_message_bytes, event, INTERNAL_ERROR, why, section))
            try:
                repair = await retrying(lambda: release_update(ctx, section, why), "releasing a dead-lettered update",
                                        max_delay_s=settings.retry_max_delay_s, handler=retry.PHASE_TWO,
                                        attempts=settings.handler_attempts)
                if repair not in merged.repairs:
                    merged.repairs.append(repair)
            except GaveUp:
                pass  # logged by retrying(); the letter still goes out
            log.error("a section of the player-updates message at offset %s dead-lettered (%s); the batch failed "
                      "with %s", event.origin.offset, why, type(error).__name__)
            continue
        rejected += part
        merged.events += one.events
        merged.applied += one.applied
        merged.replayed += one.replayed
        merged.emitted += one.emitted
        merged.gaps += one.gaps
    return merged
