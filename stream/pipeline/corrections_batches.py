"""The ``corrections`` agent's work on one message, without Faust: the correction handled
(``corrections.handle_correction``; set aside after HANDLER_ATTEMPTS), its events or dead letter
sent, then the correction recorded (which releases its ladder's hold)."""

from __future__ import annotations

import logging

from stream.logsafe import log_safe
from stream.pipeline import metrics, retry
from stream.pipeline.context import PipelineContext
from stream.pipeline.corrections import fail_correction, finish_correction, handle_correction
from stream.pipeline.messages import Incoming
from stream.pipeline.outbox import Send, TopicNames, change_messages, letter_message
from stream.pipeline.retry import GaveUp, retrying

log = logging.getLogger(__name__)


async def correction_message(ctx: PipelineContext, names: TopicNames, event: Incoming, send: Send) -> None:
    """One correction, end to end. Its input is acked only after this returns: a crash before
    redelivers it, and it resumes under its hold."""
    settings = ctx.settings
    origin = event.origin
    what = f"correction at offset {origin.offset}"
    try:
        result = await retrying(lambda: handle_correction(ctx, event.value, origin), what,
                                max_delay_s=settings.retry_max_delay_s, handler=retry.CORRECTION,
                                attempts=settings.handler_attempts)
    except GaveUp as gave_up:
        error = gave_up.error
        result = await retrying(lambda: fail_correction(ctx, event.value, origin, error), f"setting aside {what}",
                                max_delay_s=settings.retry_max_delay_s, handler=retry.CORRECTION)
    out = change_messages(names, result.events)
    if result.dead_letter is not None:
        letter = result.dead_letter
        out.append(letter_message(names, settings.max_message_bytes, letter, event.key, None))
        metrics.ROUNDS_REJECTED.labels(letter.reason).inc()
        log.warning("correction rejected to the DLQ: %s (%s)", letter.reason, log_safe(letter.message, quote=False))
    await send(out, "correction events")
    await retrying(lambda: finish_correction(ctx, result), f"recording {what}",
                   max_delay_s=settings.retry_max_delay_s, handler=retry.CORRECTION)
    log.info("correction %s of ladder %s: %s, %d event(s) %s", log_safe(result.correction_id),
             log_safe(result.ladder), result.outcome, len(result.events),
             " ".join(f"{k} {v:.3f}s" for k, v in result.seconds.items()))
