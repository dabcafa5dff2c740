"""The ``player-updates`` agent's work on one batch of messages, without Faust: phase two
(``phase_two.handle_updates``), its fallbacks, dead letters, events and confirmations.

* A message may hold several sections (``sections.py``): each section is handled as one
  PlayerUpdate (verified, applied or dead-lettered alone, with its message's origin).
* Phase one rates a batch's rounds as a chain (a player's later round uses the posterior of
  the earlier one), so a batch may hold several rounds of one player: the sections are applied
  in waves (:func:`waves`: wave k holds each player's k-th section, in order), each wave reading
  what the previous one stored and emitting its events before the next one.
* A section that is not a PlayerUpdate (only a rogue producer or a bug makes one) goes to
  ``rounds-dlq`` (reason ``bad_player_update``) as soon as its batch raises, the rest of the batch
  being handled; one that is not exactly a section of its round's stored fan-out (forged) is not
  applied and goes there too (``unverified_player_update``).
* A batch that still gives up after HANDLER_ATTEMPTS is handled section by section; one that
  keeps raising is dead-lettered (``internal_error``) and its players released from its round.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Sequence

from stream.contracts import PlayerUpdate, validate
from stream.contracts.round import BAD_PLAYER_UPDATE, INTERNAL_ERROR, UNVERIFIED_PLAYER_UPDATE
from stream.pipeline import faults, metrics, retry
from stream.pipeline.context import PipelineContext
from stream.pipeline.messages import Incoming
from stream.pipeline.outbox import Outgoing, Send, TopicNames, change_messages, update_letter
from stream.pipeline.phase_two import PhaseTwoResult, handle_updates
from stream.pipeline.retry import TRANSIENT_ERRORS, GaveUp, retrying
from stream.pipeline.sections import split_sections

log = logging.getLogger(__name__)


def sections_of(events: Sequence[Incoming]) -> list[Incoming]:
    """Every section of the messages as an input of its own (its message's key and origin)."""
    out: list[Incoming] = []
    for event in events:
        parts = split_sections(event.value)
        out += [event] if len(parts) == 1 else [Incoming(part, event.key, event.origin, event.timestamp)
                                                for part in parts]
    return out


async def phase_two_batch(ctx: PipelineContext, names: TopicNames, events: Sequence[Incoming], send: Send) -> None:
    """Phase two of a batch of ``player-updates`` messages, wave after wave (:func:`waves`):
    apply, send the events and dead letters, confirm the emitted events (the sweeper's ledger)."""
    started = time.perf_counter()
    sections = sections_of(events)
    applied = replayed = 0
    for wave in waves(sections):
        result = await _wave(ctx, names, wave, send)
        applied, replayed = applied + result.applied, replayed + result.replayed
    metrics.PLAYER_UPDATES.labels("applied").inc(applied)
    metrics.PLAYER_UPDATES.labels("re-emitted").inc(replayed)
    metrics.PHASE_TWO_SECONDS.observe(time.perf_counter() - started)
    log.debug("phase two: %d message(s), %d section(s), %d applied, %d re-emitted, %.3fs", len(events),
              len(sections), applied, replayed, time.perf_counter() - started)


async def _wave(ctx: PipelineContext, names: TopicNames, wave: Sequence[Incoming], send: Send) -> PhaseTwoResult:
    """One wave: applied in Redis (retried; section by section if it keeps raising), then its
    events and dead letters sent, then the emitted events confirmed."""
    settings = ctx.settings
    rejected: list[Outgoing] = []
    try:
        result = await retrying(lambda: handle_player_updates(ctx, names, wave, rejected), "phase two",
                                max_delay_s=settings.retry_max_delay_s, handler=retry.PHASE_TWO,
                                attempts=settings.handler_attempts)
    except GaveUp as gave_up:
        result = await handle_one_by_one(ctx, names, wave, rejected, gave_up.error)
    faults.crash_point(settings, faults.PHASE_TWO_AFTER_REDIS_BEFORE_EMIT)
    _log_rejected(rejected)
    await send(change_messages(names, result.events) + rejected, "rating changes")
    emitted = result.emitted  # (ladder, round_id, players) whose events were just sent
    await retrying(lambda: ctx.store.confirm_emitted(emitted), "confirming emitted events",
                   max_delay_s=settings.retry_max_delay_s, handler=retry.CONFIRM)
    faults.crash_point(settings, faults.PHASE_TWO_AFTER_EMIT_BEFORE_ACK)
    return result


def waves(sections: Sequence[Incoming]) -> list[list[Incoming]]:
    """The sections in waves in which no (ladder, player) appears twice: a section goes one wave
    after the last wave holding any of its players (order kept within a wave). A section that
    does not parse goes to the first wave (where it is dead-lettered)."""
    depth: dict[tuple[str, str], int] = {}
    out: list[list[Incoming]] = []
    for section in sections:
        try:
            data = json.loads(section.value)
            players = [(data["ladder"], entry["player"]) for entry in data["entries"]]
        except Exception:  # noqa: BLE001 - malformed: phase two dead-letters it
            players = []
        wave = max((depth.get(key, 0) for key in players), default=0)
        depth.update(dict.fromkeys(players, wave + 1))
        if wave == len(out):
            out.append([])
        out[wave].append(section)
    return out


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
        log.error("%d player-updates section(s) are not PlayerUpdates or kept raising: sent to the DLQ",
                  sum(reasons.values()))


def malformed_update(raw: bytes) -> str | None:
    """Why ``raw`` is not a PlayerUpdate (JSON + schema ``player-update``), or None if it is one."""
    try:
        validate("player-update", raw)
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON (or too deep), or SchemaError
        return f"not a PlayerUpdate: {type(exc).__name__}: {exc}"
    return None


def dead_letters(names: TopicNames, events: Sequence[Incoming], max_bytes: int) -> dict[int, Outgoing]:
    """Index in ``events`` → dead letter of every section that is not a PlayerUpdate."""
    out: dict[int, Outgoing] = {}
    for i, event in enumerate(events):
        why = malformed_update(event.value)
        if why is not None:
            out[i] = update_letter(names, max_bytes, event, BAD_PLAYER_UPDATE, why)
    return out


async def handle_player_updates(ctx: PipelineContext, names: TopicNames, events: Sequence[Incoming],
                                rejected: list[Outgoing]) -> PhaseTwoResult:
    """``handle_updates`` of a phase-two batch of sections. Only if it raises (other than a
    transient error) are the sections parsed again, to find malformed ones: those are put in
    ``rejected`` (dead letters, replacing its content) and the rest is handled; no malformed one:
    re-raise (the caller retries). So the normal path parses each section once."""
    handled = list(events)
    rejected.clear()  # this attempt's dead letters only
    try:
        result = await handle_updates(ctx, [event.value for event in events])
    except TRANSIENT_ERRORS:
        raise
    except Exception:
        letters = dead_letters(names, events, ctx.settings.max_message_bytes)
        if not letters:
            raise
        rejected[:] = letters.values()
        handled = [event for i, event in enumerate(events) if i not in letters]
        result = await handle_updates(ctx, [event.value for event in handled]) if handled else PhaseTwoResult([], 0, 0)
    rejected += [update_letter(names, ctx.settings.max_message_bytes, handled[i], UNVERIFIED_PLAYER_UPDATE, why)
                 for i, why in result.unverified]
    faults.raise_point(ctx.settings, faults.RAISE_IN_PHASE_TWO)
    return result


async def release_update(ctx: PipelineContext, raw: bytes, why: str) -> None:
    """The players of a dead-lettered PlayerUpdate skip its round (state unchanged), so the
    barrier of the ladder's later rounds lets them through: the ladder moves on; the round is
    marked ``failed`` (the sweeper no longer re-sends it)."""
    update = PlayerUpdate.from_json(raw)
    await ctx.store.release_queued(update.ladder, update.players, update.seq)
    await ctx.store.fail_pending_round(update.ladder, update.round_id, seq=update.seq, reason=why)


async def handle_one_by_one(ctx: PipelineContext, names: TopicNames, events: Sequence[Incoming],
                            rejected: list[Outgoing], error: Exception) -> PhaseTwoResult:
    """A phase-two batch that gave up: each section handled alone (HANDLER_ATTEMPTS attempts
    each); those that still raise are dead-lettered (``internal_error``) into ``rejected``."""
    settings = ctx.settings
    merged = PhaseTwoResult([], 0, 0)
    rejected.clear()
    for event in events:
        part: list[Outgoing] = []
        try:
            one = await retrying(lambda: handle_player_updates(ctx, names, [event], part), "phase two of one message",
                                 max_delay_s=settings.retry_max_delay_s, handler=retry.PHASE_TWO,
                                 attempts=settings.handler_attempts)
        except GaveUp as gave_up:
            why = f"handling the message kept raising {type(gave_up.error).__name__}: {gave_up.error}"[:600]
            rejected.append(update_letter(names, settings.max_message_bytes, event, INTERNAL_ERROR, why))
            try:
                await retrying(lambda: release_update(ctx, event.value, why), "releasing a dead-lettered update",
                               max_delay_s=settings.retry_max_delay_s, handler=retry.PHASE_TWO,
                               attempts=settings.handler_attempts)
            except GaveUp:
                pass  # logged by retrying(); the letter still goes out
            log.error("player-updates message at offset %s dead-lettered (%s); the batch failed with %s",
                      event.origin.offset, why, type(error).__name__)
            continue
        rejected += part
        merged.events += one.events
        merged.applied += one.applied
        merged.replayed += one.replayed
        merged.emitted += one.emitted
    return merged
