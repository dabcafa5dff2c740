"""Thin Faust agents: read messages, call the plain handlers, send what they return.

* ``phase-one`` on ``rounds`` (key = ladder, so one ladder is one partition and its rounds
  come in publish order); one actor per partition (``isolated_partitions``), so ladders on
  different partitions proceed in parallel while each ladder stays sequential.
* ``phase-two`` on ``player-updates``, in batches (``stream.take``); re-emits to
  ``rating-changes``.

Delivery: every send is awaited to the broker's acknowledgement before the input event is
acknowledged, so an offset is committed only after what it produced is durable; a crash in
between redelivers the input, and the handlers' idempotency makes that harmless.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

import faust

from stream.pipeline import metrics
from stream.pipeline.context import PipelineContext
from stream.pipeline.messages import FanOutMessage, RatingChangeMessage
from stream.pipeline.phase_one import Origin, handle_round
from stream.pipeline.phase_two import handle_updates
from stream.pipeline.topics import Topics

log = logging.getLogger(__name__)


async def send_fanout(topics: Topics, messages: Sequence[FanOutMessage]) -> None:
    """Send PlayerUpdates to their explicit partitions and wait until the broker has them all."""
    pending = [await topics.player_updates.send(key=m.key, value=m.value, partition=m.partition) for m in messages]
    await asyncio.gather(*pending)


async def send_changes(topics: Topics, events: Sequence[RatingChangeMessage]) -> None:
    """Send RatingChanges (key = player) and wait for the broker's acknowledgements."""
    pending = [await topics.rating_changes.send(key=e.key, value=e.value) for e in events]
    await asyncio.gather(*pending)


def register(app: faust.App, topics: Topics, ctx: PipelineContext) -> None:
    """Register the phase-one and phase-two agents on ``app``."""

    async def resend(messages: list[FanOutMessage]) -> None:
        log.warning("re-driving %d stored fan-out message(s)", len(messages))
        await send_fanout(topics, messages)

    ctx.resend = resend

    @app.agent(topics.rounds, name="phase-one", isolated_partitions=True)
    async def phase_one(stream: faust.StreamT) -> None:
        async for event in stream.events():
            message = event.message
            started = time.perf_counter()
            metrics.ROUND_LAG_SECONDS.set(max(0.0, time.time() - message.timestamp))
            result = await handle_round(ctx, event.value, Origin(message.topic, message.partition, message.offset))
            if result.dead_letter is not None:
                letter = result.dead_letter
                await (await topics.rounds_dlq.send(key=event.key, value=letter.to_json().encode()))
                metrics.ROUNDS_REJECTED.labels(letter.reason).inc()
                log.info("round rejected to the DLQ: %s (%s)", letter.reason, letter.message)
            await send_fanout(topics, result.updates)
            metrics.ROUNDS.labels(result.outcome).inc()
            metrics.PHASE_ONE_SECONDS.observe(time.perf_counter() - started)

    @app.agent(topics.player_updates, name="phase-two")
    async def phase_two(stream: faust.StreamT) -> None:
        async for batch in stream.take(ctx.settings.phase_two_batch, within=ctx.settings.phase_two_within_s):
            started = time.perf_counter()
            result = await handle_updates(ctx, batch)
            await send_changes(topics, result.events)
            metrics.PLAYER_UPDATES.labels("applied").inc(result.applied)
            metrics.PLAYER_UPDATES.labels("re-emitted").inc(result.replayed)
            metrics.PHASE_TWO_SECONDS.observe(time.perf_counter() - started)
