"""Thin Faust agents: read messages, call the plain handlers, send what they return.

* ``phase-one`` on ``rounds`` (key = ladder, so one ladder is one partition and its rounds
  come in publish order); one actor per partition (``isolated_partitions``), so ladders on
  different partitions proceed in parallel while each ladder stays sequential.
* ``phase-two`` on ``player-updates``, in batches (``stream.take``); re-emits to
  ``rating-changes``.

Output goes through :class:`~stream.pipeline.producer.BatchProducer` (record batches per
partition; Faust's per-message send was the bottleneck). Delivery: every send is awaited to
the broker's acknowledgement before the input event is
acknowledged, so an offset is committed only after what it produced is durable; a crash in
between redelivers the input, and the handlers' idempotency makes that harmless.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import faust

from stream.pipeline import metrics
from stream.pipeline.context import PipelineContext
from stream.pipeline.messages import FanOutMessage, RatingChangeMessage
from stream.pipeline.phase_one import Origin, handle_round
from stream.pipeline.phase_two import handle_updates
from stream.pipeline.producer import BatchProducer, Outgoing
from stream.pipeline.topics import Topics

log = logging.getLogger(__name__)


def fanout_messages(topics: Topics, messages: Sequence[FanOutMessage]) -> list[Outgoing]:
    """PlayerUpdates to their explicit partitions."""
    name = topics.player_updates.get_topic_name()
    return [Outgoing(name, m.key, m.value, m.partition) for m in messages]


def change_messages(topics: Topics, events: Sequence[RatingChangeMessage]) -> list[Outgoing]:
    """RatingChanges keyed by player (Kafka's default partition of the key)."""
    name = topics.rating_changes.get_topic_name()
    return [Outgoing(name, e.key, e.value) for e in events]


def register(app: faust.App, topics: Topics, ctx: PipelineContext) -> None:
    """Register the phase-one and phase-two agents on ``app`` (and their producer, started with it)."""
    producer = app.add_dependency(BatchProducer(ctx.settings))

    async def resend(messages: list[FanOutMessage]) -> None:
        log.warning("re-driving %d stored fan-out message(s)", len(messages))
        await producer.send(fanout_messages(topics, messages))

    ctx.resend = resend

    @app.agent(topics.rounds, name="phase-one", isolated_partitions=True)
    async def phase_one(stream: faust.StreamT) -> None:
        async for event in stream.events():
            message = event.message
            started = time.perf_counter()
            metrics.ROUND_LAG_SECONDS.set(max(0.0, time.time() - message.timestamp))
            result = await handle_round(ctx, event.value, Origin(message.topic, message.partition, message.offset))
            handled = time.perf_counter()
            if result.dead_letter is not None:
                letter = result.dead_letter
                await producer.send([Outgoing(topics.rounds_dlq.get_topic_name(), event.key,
                                              letter.to_json().encode(), message.partition)])
                metrics.ROUNDS_REJECTED.labels(letter.reason).inc()
                log.info("round rejected to the DLQ: %s (%s)", letter.reason, letter.message)
            await producer.send(fanout_messages(topics, result.updates))
            metrics.ROUNDS.labels(result.outcome).inc()
            metrics.PHASE_ONE_SECONDS.observe(time.perf_counter() - started)
            log.debug("phase one: %s/%s seq %s %s, %d message(s), %.3fs (%.3fs sending)", result.ladder,
                      result.round_id, result.seq, result.outcome, len(result.updates), time.perf_counter() - started,
                      time.perf_counter() - handled)

    @app.agent(topics.player_updates, name="phase-two")
    async def phase_two(stream: faust.StreamT) -> None:
        async for batch in stream.take(ctx.settings.phase_two_batch, within=ctx.settings.phase_two_within_s):
            started = time.perf_counter()
            result = await handle_updates(ctx, batch)
            handled = time.perf_counter()
            await producer.send(change_messages(topics, result.events))
            metrics.PLAYER_UPDATES.labels("applied").inc(result.applied)
            metrics.PLAYER_UPDATES.labels("re-emitted").inc(result.replayed)
            metrics.PHASE_TWO_SECONDS.observe(time.perf_counter() - started)
            log.debug("phase two: %d message(s), %d applied, %d re-emitted, %.3fs (%.3fs sending)", len(batch),
                      result.applied, result.replayed, time.perf_counter() - started, time.perf_counter() - handled)
