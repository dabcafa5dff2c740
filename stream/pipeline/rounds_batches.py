"""The ``rounds`` agent's work on one batch of messages, without Faust: phase one of the batch
as a unit (``phase_one.handle_rounds``), its fallbacks, dead letters and metrics.

* The batch is handled whole, retried (``retry.retrying``) up to HANDLER_ATTEMPTS times on an
  unexpected error (forever while Redis is unreachable). If it keeps raising, its messages are
  handled one by one (``phase_one.handle_round``, HANDLER_ATTEMPTS each), so a message that
  cannot be digested fails alone: it is set aside (``phase_one.fail``: dead letter
  ``internal_error``, its round ``failed``) and the others are rated.
* The batch's records (dead letters, the fan-out joined per partition, the insert corrections of
  late rounds to ``corrections``) go to ``enqueue`` at
  once; the messages left to one-by-one handling follow, each one's records enqueued before the
  next is handled (its barrier may wait on them).
* A round published under another key than its ladder (``messages.misrouted``) is not rated
  here: it is forwarded, unchanged, to its topic keyed by its ladder, with the batch's records
  (acknowledged before the input is), and rated when it arrives on its ladder's partition.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from stream.logsafe import log_safe
from stream.pipeline import faults, metrics, retry
from stream.pipeline.context import PipelineContext
from stream.contracts import RoundRejected, RoundResult, parse_round
from stream.contracts.round import NO_OUTCOME
from stream.pipeline.messages import FORWARDED, FanOutMessage, Incoming, misrouted
from stream.pipeline.outbox import Outgoing, TopicNames, fanout_messages, letter_message, repair_messages
from stream.pipeline.phase_one import BatchResult, PhaseOneResult, fail, handle_round, handle_rounds
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
    out = [_letter(names, settings.max_message_bytes, event, result)
           for event, result in zip(events, batch.results) if result is not None and result.dead_letter is not None]
    out += [_forward(event, result) for event, result in zip(events, batch.results)
            if result is not None and result.outcome == FORWARDED]
    inserts = [result.insert for result in batch.results if result is not None and result.insert is not None]
    await enqueue(out + fanout_messages(names, await _maybe_drop(batch.messages)) + repair_messages(names, inserts))
    done = [result for result in batch.results if result is not None]
    _count(done, (time.perf_counter() - started) / max(1, len(done)))
    for i in batch.deferred:
        done.append(await one_round(ctx, names, events[i], enqueue))
    return done


async def one_round(ctx: PipelineContext, names: TopicNames, event: Incoming, enqueue: Enqueue) -> PhaseOneResult:
    """Phase one of one message alone: HANDLER_ATTEMPTS attempts, then set aside; its records
    enqueued."""
    settings = ctx.settings
    started = time.perf_counter()
    forwarded = _misrouted_round(ctx, event)
    if forwarded is not None:
        await enqueue([_forward(event, forwarded)])
        _count([forwarded], time.perf_counter() - started)
        return forwarded
    what = f"phase one of offset {event.origin.offset}"
    try:
        result = await retrying(lambda: handle_round(ctx, event.value, event.origin), what,
                                max_delay_s=settings.retry_max_delay_s, handler=retry.PHASE_ONE,
                                attempts=settings.handler_attempts)
    except GaveUp as gave_up:  # the message keeps raising: set it aside, move on
        error = gave_up.error
        result = await retrying(lambda: fail(ctx, event.value, event.origin, error), f"setting aside {what}",
                                max_delay_s=settings.retry_max_delay_s, handler=retry.PHASE_ONE)
    out = [] if result.dead_letter is None else [_letter(names, settings.max_message_bytes, event, result)]
    inserts = [] if result.insert is None else [result.insert]
    await enqueue(out + fanout_messages(names, await _maybe_drop(result.updates)) + repair_messages(names, inserts))
    _count([result], time.perf_counter() - started)
    return result


def _letter(names: TopicNames, max_message_bytes: int, event: Incoming, result: PhaseOneResult) -> Outgoing:
    """The dead letter of a rejected message, to its partition of ``rounds-dlq``."""
    letter = result.dead_letter
    assert letter is not None
    log.info("round rejected to the DLQ: %s (%s)", letter.reason, log_safe(letter.message, quote=False))
    return letter_message(names, max_message_bytes, letter, event.key, event.origin.partition)


def _misrouted_round(ctx: PipelineContext, event: Incoming) -> PhaseOneResult | None:
    """The ``forwarded`` outcome if ``event`` is a round read under another key than its ladder
    (what ``handle_rounds`` decides for a batch; here for a message handled alone)."""
    try:
        round_: RoundResult | None = parse_round(event.value, limits=ctx.limits)
    except RoundRejected as rejection:  # an outcome-free round is registered (seq): it is forwarded too
        round_ = rejection.round if rejection.reason == NO_OUTCOME else None
    except Exception:  # noqa: BLE001 - a message whose parsing raises is handle_round's to set aside
        return None
    if round_ is None or not misrouted(event, round_.ladder):
        return None
    return PhaseOneResult(FORWARDED, round_.ladder, round_.round_id)


def _forward(event: Incoming, result: PhaseOneResult) -> Outgoing:
    """A round read under another key than its ladder, unchanged, to its topic keyed by its ladder."""
    assert result.ladder is not None and event.origin.topic is not None
    log.info("round %s/%s was published under another key than its ladder: forwarded to its ladder's partition",
             log_safe(result.ladder), log_safe(result.round_id))
    return Outgoing(event.origin.topic, result.ladder.encode(), event.value)


async def _maybe_drop(messages: list[FanOutMessage]) -> list[FanOutMessage]:
    """The messages, less the first one when the fault seam drops it (DROP_ONE_FANOUT_MESSAGE)."""
    if messages and await faults.at(faults.DROP_ONE_FANOUT_MESSAGE):
        return messages[1:]
    return messages


def _count(results: Sequence[PhaseOneResult], seconds_each: float) -> None:
    """Metrics and a debug line per handled message."""
    for result in results:
        metrics.ROUNDS.labels(result.outcome).inc()
        if result.dead_letter is not None:
            metrics.ROUNDS_REJECTED.labels(result.dead_letter.reason).inc()
        metrics.PHASE_ONE_SECONDS.observe(seconds_each)
        log.debug("phase one: %s/%s seq %s %s, %d message(s)", log_safe(result.ladder), log_safe(result.round_id),
                  result.seq, result.outcome, len(result.updates))
