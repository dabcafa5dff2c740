"""The ``rounds`` agent's work on one batch of messages, without Faust: phase one of the batch
as a unit (``phase_one.handle_rounds``), its fallbacks, dead letters and metrics.

The batch is retried up to HANDLER_ATTEMPTS times, then handled one message at a time (a message
that still raises is set aside: ``phase_one.fail``). Its records (dead letters, fan-out, insert
corrections, misrouted rounds forwarded keyed by their ladder) go to ``enqueue`` at once; the
deferred messages follow, each a batch of one, each one's records enqueued before the next.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from stream.logsafe import log_safe
from stream.pipeline import faults, metrics, retry
from stream.pipeline.context import PipelineContext
from stream.pipeline.messages import FORWARDED, FanOutMessage, Incoming
from stream.pipeline.outbox import Outgoing, TopicNames, fanout_messages, letter_message, repair_messages
from stream.pipeline.phase_one import BatchResult, PhaseOneResult, fail, handle_one, handle_rounds
from stream.pipeline.retry import GaveUp, retrying

log = logging.getLogger(__name__)

Enqueue = Callable[[list[Outgoing]], Awaitable[None]]
"""Hands records to the producer (in flight at once; the agent awaits their acknowledgement)."""


async def phase_one_batch(ctx: PipelineContext, names: TopicNames, events: Sequence[Incoming],
                          enqueue: Enqueue) -> list[PhaseOneResult]:
    """Phase one of a batch of ``rounds`` messages (see the module docstring); returns what
    happened to each message, in order."""
    settings = ctx.settings
    started = time.perf_counter()
    for event in events:
        if event.timestamp is not None:
            metrics.ROUND_LAG_SECONDS.set(max(0.0, time.time() - event.timestamp))
    try:
        batch = await retrying(lambda: handle_rounds(ctx, events), f"phase one of a batch of {len(events)}",
                               max_delay_s=settings.retry_max_delay_s, handler=retry.PHASE_ONE,
                               attempts=settings.handler_attempts)
    except GaveUp as gave_up:
        log.error("phase one of a batch of %d message(s) kept raising %s: handling them one by one", len(events),
                  type(gave_up.error).__name__)
        batch = BatchResult([None] * len(events), deferred=list(range(len(events))))
    await enqueue(await _records(names, settings.max_message_bytes, events, batch.results, batch.messages))
    done = [result for result in batch.results if result is not None]
    _count(done, (time.perf_counter() - started) / max(1, len(done)))
    for i in batch.deferred:
        done.append(await one_round(ctx, names, events[i], enqueue))
    return done


async def one_round(ctx: PipelineContext, names: TopicNames, event: Incoming, enqueue: Enqueue) -> PhaseOneResult:
    """Phase one of one message alone, a batch of one: HANDLER_ATTEMPTS attempts, then set aside;
    its records enqueued."""
    settings = ctx.settings
    started = time.perf_counter()
    what = f"phase one of offset {event.origin.offset}"
    try:
        result = await retrying(lambda: handle_one(ctx, event), what, max_delay_s=settings.retry_max_delay_s,
                                handler=retry.PHASE_ONE, attempts=settings.handler_attempts)
    except GaveUp as gave_up:  # the message keeps raising: set it aside, move on
        error = gave_up.error
        result = await retrying(lambda: fail(ctx, event.value, event.origin, error), f"setting aside {what}",
                                max_delay_s=settings.retry_max_delay_s, handler=retry.PHASE_ONE)
    await enqueue(await _records(names, settings.max_message_bytes, [event], [result], result.updates))
    _count([result], time.perf_counter() - started)
    return result


async def _records(names: TopicNames, max_message_bytes: int, events: Sequence[Incoming],
                   results: Sequence[PhaseOneResult | None], messages: list[FanOutMessage]) -> list[Outgoing]:
    """The dead letters of the rejected messages, the misrouted rounds forwarded, the fan-out
    ``messages`` (less the first one when the fault seam DROP_ONE_FANOUT_MESSAGE drops it), then the
    insert corrections of late rounds."""
    done = [(event, result) for event, result in zip(events, results) if result is not None]
    out = [_letter(names, max_message_bytes, event, result) for event, result in done if result.dead_letter is not None]
    out += [_forward(event, result) for event, result in done if result.outcome == FORWARDED]
    if messages and await faults.at(faults.DROP_ONE_FANOUT_MESSAGE):
        messages = messages[1:]
    return out + fanout_messages(names, messages) + repair_messages(names, [result.insert for _, result in done
                                                                           if result.insert is not None])


def _letter(names: TopicNames, max_message_bytes: int, event: Incoming, result: PhaseOneResult) -> Outgoing:
    """The dead letter of a rejected message, to its partition of ``rounds-dlq``."""
    letter = result.dead_letter
    assert letter is not None
    log.info("round rejected to the DLQ: %s (%s)", letter.reason, log_safe(letter.message, quote=False))
    return letter_message(names, max_message_bytes, letter, event.key, event.origin.partition)


def _forward(event: Incoming, result: PhaseOneResult) -> Outgoing:
    """A round read under another key than its ladder, unchanged, to its topic keyed by its ladder."""
    assert result.ladder is not None and event.origin.topic is not None
    log.info("round %s/%s was published under another key than its ladder: forwarded to its ladder's partition",
             log_safe(result.ladder), log_safe(result.round_id))
    return Outgoing(event.origin.topic, result.ladder.encode(), event.value)


def _count(results: Sequence[PhaseOneResult], seconds_each: float) -> None:
    """Metrics and a debug line per handled message."""
    for result in results:
        metrics.ROUNDS.labels(result.outcome).inc()
        if result.dead_letter is not None:
            metrics.ROUNDS_REJECTED.labels(result.dead_letter.reason).inc()
        metrics.PHASE_ONE_SECONDS.observe(seconds_each)
        log.debug("phase one: %s/%s seq %s %s, %d message(s)", log_safe(result.ladder), log_safe(result.round_id),
                  result.seq, result.outcome, len(result.updates))
