"""Thin Faust agents: read messages, call the plain handlers, send what they return.

* ``phase-one`` on ``rounds`` (key = ladder, so one ladder is one partition and its rounds
  come in publish order); one actor per partition (``isolated_partitions``), so ladders on
  different partitions proceed in parallel while each ladder stays sequential.
* ``phase-two`` on ``player-updates``, in batches (``stream.take``); re-emits to
  ``rating-changes``.
* ``corrections`` on ``corrections`` (key = ladder): one correction at a time
  (``corrections.py``): it holds its ladder, waits for the ladder's rounds in flight, re-rates,
  sends its events (or its dead letter), then records itself and releases the hold.
* ``sweeper``: a timer (every SWEEP_INTERVAL_S) re-driving rounds still incomplete after
  SWEEP_TIMEOUT_S (``sweeper.py``).

Faust acks an event once the agent moves on, even if the handler raised; so every handler
call and send is retried (``retry.py``): forever while Redis or Kafka is unreachable, and up to
HANDLER_ATTEMPTS times for any other exception, after which the message that keeps raising is
dead-lettered (``internal_error``) and the stream moves on. A ``player-updates`` message is
one or more PlayerUpdate sections (``messages.split_sections``); one with a section that is not
a PlayerUpdate (only a rogue producer or a bug makes one) goes whole to ``rounds-dlq`` (reason
``bad_player_update``) as soon as its batch raises, the rest of the batch being handled; a
batch that still gives up is handled section by section, dead-lettering (and releasing) the
sections that raise.
Dead letters are cut to fit MAX_MESSAGE_BYTES (``DeadLetter.to_json``). A well-formed section that is
not exactly one of its round's stored fan-out (forged: ``phase_two``) is not applied and goes
there alone (reason ``unverified_player_update``).

Output goes through :class:`~stream.pipeline.producer.BatchProducer` (record batches per
partition; Faust's per-message send was the bottleneck). Delivery: every send is awaited to
the broker's acknowledgement before the input event is acknowledged, so an offset is
committed only after what it produced is durable; a crash in between redelivers the input,
and the handlers' idempotency makes that harmless. Phase one takes its rounds in batches
(``PHASE_ONE_BATCH`` / ``PHASE_ONE_WITHIN_S``): rounds are still handled one at a time and
each one's output is sent at once, but the acknowledgements are awaited once per batch.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import cast

import faust

from stream.contracts import DeadLetter, PlayerUpdate, validate
from stream.contracts.round import BAD_PLAYER_UPDATE, INTERNAL_ERROR, UNVERIFIED_PLAYER_UPDATE
from stream.logsafe import log_safe
from stream.pipeline import faults, metrics, retry
from stream.pipeline.compat import take_batches
from stream.pipeline.context import PipelineContext
from stream.pipeline.messages import FanOutMessage, RatingChangeMessage, split_sections, value_limit
from stream.pipeline.corrections import fail_correction, finish_correction, handle_correction
from stream.pipeline.phase_one import Origin, fail, handle_round
from stream.pipeline.phase_two import PhaseTwoResult, handle_updates
from stream.pipeline.producer import BatchProducer, Outgoing
from stream.pipeline.retry import TRANSIENT_ERRORS, GaveUp, retrying
from stream.pipeline.sweeper import sweep
from stream.pipeline.topics import Topics

log = logging.getLogger(__name__)

__all__ = ["BAD_PLAYER_UPDATE", "register"]


def letter_message(topics: Topics, max_message_bytes: int, letter: DeadLetter, key: bytes | None,
                   partition: int | None) -> Outgoing:
    """A dead letter to ``rounds-dlq``, cut to fit MAX_MESSAGE_BYTES (its original's prefix)."""
    value = letter.to_json(max_bytes=value_limit(max_message_bytes)).encode()
    return Outgoing(topics.rounds_dlq.get_topic_name(), key, value, partition)


def fanout_messages(topics: Topics, messages: Sequence[FanOutMessage]) -> list[Outgoing]:
    """PlayerUpdates to their explicit partitions."""
    name = topics.player_updates.get_topic_name()
    return [Outgoing(name, m.key, m.value, m.partition) for m in messages]


def change_messages(topics: Topics, events: Sequence[RatingChangeMessage]) -> list[Outgoing]:
    """RatingChanges keyed by player (Kafka's default partition of the key)."""
    name = topics.rating_changes.get_topic_name()
    return [Outgoing(name, e.key, e.value) for e in events]


def malformed_update(raw: bytes) -> str | None:
    """Why the message ``raw`` is not one or more PlayerUpdate sections (each JSON + schema
    ``player-update``), or None if it is."""
    sections = split_sections(raw)
    for k, section in enumerate(sections):
        try:
            validate("player-update", section)
        except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON (or too deep), or SchemaError
            where = f" (section {k + 1} of {len(sections)})" if len(sections) > 1 else ""
            return f"not a PlayerUpdate: {type(exc).__name__}: {exc}{where}"
    return None


def update_letter(topics: Topics, max_bytes: int, event: faust.EventT[bytes], reason: str, why: str,
                  original: bytes | None = None) -> Outgoing:
    """A dead letter (to ``rounds-dlq``, same partition, no key) of a ``player-updates`` message,
    or of one of its sections (``original``)."""
    message = event.message
    letter = DeadLetter(reason, why, None, event.value if original is None else original, time.time(), message.topic,
                        message.partition, message.offset)
    return letter_message(topics, max_bytes, letter, None, message.partition)


def dead_letters(topics: Topics, events: Sequence[faust.EventT[bytes]], max_bytes: int,
                 values: Sequence[bytes] | None = None) -> dict[int, Outgoing]:
    """Index in ``events`` → dead letter of every message that is not PlayerUpdate sections: a
    message with any malformed section is not phase one's and is dead-lettered whole, as read."""
    out: dict[int, Outgoing] = {}
    for i, event in enumerate(events):
        value = event.value if values is None else values[i]
        why = malformed_update(value)
        if why is not None:
            out[i] = update_letter(topics, max_bytes, event, BAD_PLAYER_UPDATE, why, value)
    return out


async def handle_player_updates(ctx: PipelineContext, topics: Topics, events: Sequence[faust.EventT[bytes]],
                                rejected: list[Outgoing], values: Sequence[bytes] | None = None) -> PhaseTwoResult:
    """``handle_updates`` of a phase-two batch. Only if it raises (other than a transient error)
    are the messages parsed again, to find malformed ones: those are put in ``rejected`` (dead
    letters, replacing its content) and the rest is handled; no malformed one: re-raise (the
    caller retries). So the normal path parses each message once. ``values``: what to handle of
    each event (default: its value; one section of it when handled section by section)."""
    raws = [event.value for event in events] if values is None else list(values)
    handled = list(events)
    rejected.clear()  # this attempt's dead letters only
    try:
        result = await handle_updates(ctx, raws)
    except TRANSIENT_ERRORS:
        raise
    except Exception:
        letters = dead_letters(topics, events, ctx.settings.max_message_bytes, raws)
        if not letters:
            raise
        rejected[:] = letters.values()
        handled = [event for i, event in enumerate(events) if i not in letters]
        raws = [raw for i, raw in enumerate(raws) if i not in letters]
        result = await handle_updates(ctx, raws) if handled else PhaseTwoResult([], 0, 0)
    rejected += [update_letter(topics, ctx.settings.max_message_bytes, handled[i], UNVERIFIED_PLAYER_UPDATE, why,
                               section) for (i, why), section in zip(result.unverified, result.unverified_sections)]
    faults.raise_point(ctx.settings, faults.RAISE_IN_PHASE_TWO)
    return result


async def release_update(ctx: PipelineContext, raw: bytes, why: str) -> None:
    """The players of a dead-lettered PlayerUpdate section skip its round (state unchanged, their
    ``last_seq`` moved up to it), so the ladder's later rounds go on for them (barrier, chain
    rule); the round is marked ``failed`` (the sweeper no longer re-sends it)."""
    update = PlayerUpdate.from_json(raw)
    await ctx.store.release_queued(update.ladder, update.players, update.seq)
    await ctx.store.fail_pending_round(update.ladder, update.round_id, seq=update.seq, reason=why)


async def handle_one_by_one(ctx: PipelineContext, topics: Topics, events: Sequence[faust.EventT[bytes]],
                            rejected: list[Outgoing], error: Exception) -> PhaseTwoResult:
    """A phase-two batch that gave up: each message handled alone, section by section, in order
    (HANDLER_ATTEMPTS attempts each); a message with a malformed section is dead-lettered whole
    (``bad_player_update``), a section that still raises alone (``internal_error``, the letter
    holds that section) and its players released."""
    settings = ctx.settings
    merged = PhaseTwoResult([], 0, 0)
    rejected.clear()
    malformed = dead_letters(topics, events, settings.max_message_bytes)
    rejected += malformed.values()
    for event, section in ((e, section) for i, e in enumerate(events) if i not in malformed
                           for section in split_sections(e.value)):
        part: list[Outgoing] = []
        try:
            one = await retrying(lambda: handle_player_updates(ctx, topics, [event], part, [section]),
                                 "phase two of one section", max_delay_s=settings.retry_max_delay_s,
                                 handler=retry.PHASE_TWO, attempts=settings.handler_attempts)
        except GaveUp as gave_up:
            why = f"handling the message kept raising {type(gave_up.error).__name__}: {gave_up.error}"[:600]
            rejected.append(update_letter(topics, settings.max_message_bytes, event, INTERNAL_ERROR, why, section))
            try:
                await retrying(lambda: release_update(ctx, section, why), "releasing a dead-lettered update",
                               max_delay_s=settings.retry_max_delay_s, handler=retry.PHASE_TWO,
                               attempts=settings.handler_attempts)
            except GaveUp:
                pass  # logged by retrying(); the letter still goes out
            log.error("a section of the player-updates message at offset %s dead-lettered (%s); the batch failed "
                      "with %s", event.message.offset, why, type(error).__name__)
            continue
        rejected += part
        merged.events += one.events
        merged.applied += one.applied
        merged.replayed += one.replayed
        merged.emitted += one.emitted
        merged.gaps += one.gaps
    return merged


async def settle(acks: Sequence[asyncio.Future[object]], sent: list[Outgoing], what: str,
                 send: Callable[[list[Outgoing], str], Awaitable[None]]) -> None:
    """Wait for the broker's acknowledgement of messages already in flight; if any failed
    (broker unreachable, or any other error), send them all again through ``send``, which
    retries until it works (every consumer is idempotent): the input is never acked past."""
    try:
        await asyncio.gather(*acks)
    except Exception as exc:
        level = logging.WARNING if isinstance(exc, TRANSIENT_ERRORS) else logging.ERROR
        log.log(level, "%s failed (%s: %s); sending again", what, type(exc).__name__, exc)
        await send(sent, what)


def register(app: faust.App, topics: Topics, ctx: PipelineContext) -> None:
    """Register the phase-one and phase-two agents and the sweeper on ``app`` (and their producer)."""
    producer = BatchProducer(ctx.settings)
    app.add_dependency(producer)
    settings = ctx.settings

    async def send(messages: list[Outgoing], what: str) -> None:
        await retrying(lambda: producer.send(messages), f"sending {what}", max_delay_s=settings.retry_max_delay_s,
                       handler=retry.SEND)

    async def resend(messages: list[FanOutMessage]) -> None:
        log.warning("re-driving %d stored fan-out message(s)", len(messages))
        await send(fanout_messages(topics, messages), "re-driven fan-out")

    ctx.resend = resend

    async def reject(letter: DeadLetter) -> None:
        metrics.ROUNDS_REJECTED.labels(letter.reason).inc()
        await send([letter_message(topics, settings.max_message_bytes, letter, None, None)], "dead letter")

    ctx.reject = reject

    async def partition_count() -> int:
        return await producer.partition_count(topics.player_updates.get_topic_name())

    ctx.partition_count = partition_count

    @app.agent(topics.rounds, name="phase-one", isolated_partitions=True)
    async def phase_one(stream: faust.StreamT[bytes]) -> None:
        # A batch of rounds is handled one by one, in order (each reads the priors the previous
        # ones left); each round's output is handed to the producer at once and flies while the
        # next round is handled, and the batch's acknowledgements are awaited together before
        # Faust acks the batch's events (after the loop body). Rounds waiting at the barrier
        # for an earlier round of the same batch are fine: its fan-out is already in flight.
        async for events in take_batches(stream, settings.phase_one_batch, settings.phase_one_within_s):
            batch_started = time.perf_counter()
            sent: list[Outgoing] = []
            acks: list[asyncio.Future[object]] = []
            for event in events:
                message = event.message
                started = time.perf_counter()
                metrics.ROUND_LAG_SECONDS.set(max(0.0, time.time() - message.timestamp))
                origin = Origin(message.topic, message.partition, message.offset)
                what = f"phase one of offset {message.offset}"
                try:
                    result = await retrying(lambda: handle_round(ctx, event.value, origin), what,
                                            max_delay_s=settings.retry_max_delay_s, handler=retry.PHASE_ONE,
                                            attempts=settings.handler_attempts)
                except GaveUp as gave_up:  # the message keeps raising: set it aside, move on
                    error = gave_up.error
                    result = await retrying(lambda: fail(ctx, event.value, origin, error), f"setting aside {what}",
                                            max_delay_s=settings.retry_max_delay_s, handler=retry.PHASE_ONE)
                out: list[Outgoing] = []
                if result.dead_letter is not None:
                    letter = result.dead_letter
                    out.append(letter_message(topics, settings.max_message_bytes, letter, event.key, message.partition))
                    metrics.ROUNDS_REJECTED.labels(letter.reason).inc()
                    log.info("round rejected to the DLQ: %s (%s)", letter.reason, log_safe(letter.message, quote=False))
                updates = result.updates
                if updates and faults.fires(settings, faults.DROP_ONE_FANOUT_MESSAGE):
                    updates = updates[1:]
                out += fanout_messages(topics, updates)
                sent += out
                try:
                    acks += await producer.enqueue(out)
                except Exception:  # retried in place until sent: later rounds may need it
                    await send(out, "fan-out")
                metrics.ROUNDS.labels(result.outcome).inc()
                metrics.PHASE_ONE_SECONDS.observe(time.perf_counter() - started)
                log.debug("phase one: %s/%s seq %s %s, %d message(s), %.3fs", log_safe(result.ladder),
                          log_safe(result.round_id),
                          result.seq, result.outcome, len(result.updates), time.perf_counter() - started)
            settling = time.perf_counter()
            await settle(acks, sent, "fan-out", send)
            faults.crash_point(settings, faults.AFTER_FANOUT_SENT_BEFORE_ACK)
            log.debug("phase one batch: %d round(s), %.3fs (%.3fs awaiting acknowledgements)", len(events),
                      time.perf_counter() - batch_started, time.perf_counter() - settling)

    @app.agent(topics.player_updates, name="phase-two")
    async def phase_two(stream: faust.StreamT[bytes]) -> None:
        async for batch in take_batches(stream, settings.phase_two_batch, settings.phase_two_within_s):
            started = time.perf_counter()
            rejected: list[Outgoing] = []
            try:
                result = await retrying(lambda: handle_player_updates(ctx, topics, batch, rejected), "phase two",
                                        max_delay_s=settings.retry_max_delay_s, handler=retry.PHASE_TWO,
                                        attempts=settings.handler_attempts)
            except GaveUp as gave_up:
                result = await handle_one_by_one(ctx, topics, batch, rejected, gave_up.error)
            handled = time.perf_counter()
            faults.crash_point(settings, faults.PHASE_TWO_AFTER_REDIS_BEFORE_EMIT)
            if rejected:
                reasons = Counter(json.loads(m.value)["reason"] for m in rejected)
                for reason, n in reasons.items():
                    metrics.ROUNDS_REJECTED.labels(reason).inc(n)
                unverified = reasons.pop(UNVERIFIED_PLAYER_UPDATE, 0)
                if unverified:
                    log.error("%d player-updates message(s) are not in their round's stored fan-out: not applied, "
                              "sent to the DLQ (%s)", unverified, UNVERIFIED_PLAYER_UPDATE)
                if reasons:
                    log.error("%d player-updates message(s) are not PlayerUpdates or kept raising: sent to the DLQ",
                              sum(reasons.values()))
            await send(change_messages(topics, result.events) + rejected, "rating changes")
            emitted = result.emitted  # (ladder, round_id, players) whose events were just sent
            await retrying(lambda: ctx.store.confirm_emitted(emitted), "confirming emitted events",
                           max_delay_s=settings.retry_max_delay_s, handler=retry.CONFIRM)
            faults.crash_point(settings, faults.PHASE_TWO_AFTER_EMIT_BEFORE_ACK)
            metrics.PLAYER_UPDATES.labels("applied").inc(result.applied)
            metrics.PLAYER_UPDATES.labels("re-emitted").inc(result.replayed)
            metrics.PLAYER_UPDATES.labels("gap").inc(result.gaps)
            metrics.PHASE_TWO_SECONDS.observe(time.perf_counter() - started)
            log.debug("phase two: %d message(s), %d applied, %d re-emitted, %.3fs (%.3fs sending)", len(batch),
                      result.applied, result.replayed, time.perf_counter() - started, time.perf_counter() - handled)

    @app.agent(topics.corrections, name="corrections")
    async def corrections(stream: faust.StreamT[bytes]) -> None:
        # One correction at a time; its event is acked only once its events are sent and the
        # correction is recorded (a crash before: redelivered, and it resumes under its hold).
        async for events in take_batches(stream, 1, 0.0):
            for event in events:
                message = event.message
                origin = Origin(message.topic, message.partition, message.offset)
                what = f"correction at offset {message.offset}"
                try:
                    result = await retrying(lambda: handle_correction(ctx, event.value, origin), what,
                                            max_delay_s=settings.retry_max_delay_s, handler=retry.CORRECTION,
                                            attempts=settings.handler_attempts)
                except GaveUp as gave_up:
                    error = gave_up.error
                    result = await retrying(lambda: fail_correction(ctx, event.value, origin, error),
                                            f"setting aside {what}", max_delay_s=settings.retry_max_delay_s,
                                            handler=retry.CORRECTION)
                out = change_messages(topics, result.events)
                if result.dead_letter is not None:
                    letter = result.dead_letter
                    out.append(letter_message(topics, settings.max_message_bytes, letter, event.key, None))
                    metrics.ROUNDS_REJECTED.labels(letter.reason).inc()
                    log.warning("correction rejected to the DLQ: %s (%s)", letter.reason,
                                log_safe(letter.message, quote=False))
                await send(out, "correction events")
                await retrying(lambda: finish_correction(ctx, result), f"recording {what}",
                               max_delay_s=settings.retry_max_delay_s, handler=retry.CORRECTION)
                log.info("correction %s of ladder %s: %s, %d event(s) %s", log_safe(result.correction_id),
                         log_safe(result.ladder), result.outcome, len(result.events),
                         " ".join(f"{k} {v:.3f}s" for k, v in result.seconds.items()))

    @app.timer(interval=settings.sweep_interval_s, name="sweeper")  # type: ignore[untyped-decorator]  # faust: untyped
    async def sweeper() -> None:
        # retrying() retries every error (logged, counted), so a failing sweep never stops the timer
        await retrying(lambda: sweep(ctx), "sweep", max_delay_s=settings.retry_max_delay_s, handler=retry.SWEEP)
