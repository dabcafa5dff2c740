"""Thin Faust agents: read messages, call the plain handlers, send what they return.

``phase-one`` on ``rounds`` (one actor per partition: each ladder sequential), ``phase-two`` on
``player-updates``, ``corrections`` one at a time, the ``sweeper`` timer, and with QUEUES the matchmaking
agent and task. Every send is awaited to the broker's acknowledgement before the input is acknowledged, and
retried (``retry.py``): forever while Redis or Kafka is unreachable, else up to HANDLER_ATTEMPTS, then
dead-lettered ``internal_error``.
"""

from __future__ import annotations

import asyncio
import logging
import time

import faust

from stream.contracts.round import INTERNAL_ERROR
from stream.matchmaking import QueueConfig
from stream.pipeline import faults, metrics, retry
from stream.pipeline.runtime.compat import assigned_partitions, incoming, take_batches
from stream.pipeline.context import PipelineContext
from stream.pipeline.corrections_batches import correction_message
from stream.pipeline.matchmaking import MatchTopicNames, Matchmaker, dead_letter, handle_tickets, tick_queue
from stream.pipeline.partitioner import partition_for
from stream.pipeline.messages import Incoming
from stream.pipeline.outbox import Outgoing, Send, settle
from stream.pipeline.runtime.producer import BatchProducer, WorkerOutbox
from stream.pipeline.rounds_batches import phase_one_batch
from stream.pipeline.shutdown import CORRECTIONS, PHASE_ONE, PHASE_TWO, Drain
from stream.pipeline.sweeper import sweep
from stream.pipeline.runtime.topics import Topics
from stream.pipeline.topics import MATCH_TICKETS_DLQ, MATCHES, TICKET_EVENTS
from stream.pipeline.timings import BatchTimings
from stream.pipeline.updates_batches import apply_updates, emit_applied

log = logging.getLogger(__name__)


def register(app: faust.App, topics: Topics, ctx: PipelineContext, outbox: WorkerOutbox, drain: Drain) -> None:
    """Register the phase-one and phase-two agents and the sweeper on ``app`` (and the producer of
    ``outbox``, ``ctx``'s); ``drain``: SIGTERM's gates of the agents' intake (``shutdown.py``)."""
    producer, names, send = outbox.producer, outbox.names, outbox.send
    app.add_dependency(producer)
    settings = ctx.settings
    timings = BatchTimings(settings.batch_timings_dir)

    @app.agent(topics.rounds, name="phase-one", isolated_partitions=True)
    async def phase_one(stream: faust.StreamT[bytes]) -> None:
        # Each batch's records fly as soon as they are built; their acknowledgements are awaited
        # together before Faust acks the batch's events (after the loop body).
        async for events in take_batches(stream, settings.phase_one_batch, settings.phase_one_within_s,
                                                 drain.gate(PHASE_ONE)):
            taken_at, started = time.time(), time.perf_counter()
            sent: list[Outgoing] = []
            acks: list[asyncio.Future[object]] = []

            async def enqueue(out: list[Outgoing]) -> None:
                sent.extend(out)
                try:
                    acks.extend(await producer.enqueue(out))
                except Exception:  # retried in place until sent: later rounds may need it
                    await send(out, "fan-out")

            inputs = [incoming(event) for event in events]
            await phase_one_batch(ctx, names, inputs, enqueue)
            settling = time.perf_counter()
            await settle(acks, sent, "fan-out", send)
            await faults.at(faults.AFTER_FANOUT_SENT_BEFORE_ACK)
            settled = time.perf_counter()
            timings.record(1, inputs, taken_at, {"handle": settling - started, "acks": settled - settling})
            log.debug("phase one batch: %d round(s), %.3fs (%.3fs awaiting acknowledgements)", len(events),
                      settled - started, settled - settling)

    @app.agent(topics.player_updates, name="phase-two")
    async def phase_two(stream: faust.StreamT[bytes]) -> None:
        async for batch in take_batches(stream, settings.phase_two_batch, settings.phase_two_within_s,
                                                drain.gate(PHASE_TWO)):
            taken_at, started = time.time(), time.perf_counter()
            inputs = [incoming(event) for event in batch]
            applied = await apply_updates(ctx, names, inputs)
            emitting = time.perf_counter()
            await emit_applied(ctx, names, applied, send)  # = phase_two_batch, timed in two halves
            timings.record(2, inputs, taken_at, {"apply": emitting - started, "emit": time.perf_counter() - emitting})

    @app.agent(topics.corrections, name="corrections")
    async def corrections(stream: faust.StreamT[bytes]) -> None:
        async for events in take_batches(stream, 1, 0.0, drain.gate(CORRECTIONS)):  # one at a time
            for event in events:
                await correction_message(ctx, names, incoming(event), send)

    @app.timer(interval=settings.sweep_interval_s, name="sweeper")  # type: ignore[untyped-decorator]  # faust: untyped
    async def sweeper() -> None:
        # retry.retrying() retries every error (logged, counted), so a failing sweep never stops the timer
        await retry.retrying(lambda: sweep(ctx), "sweep", max_delay_s=settings.retry_max_delay_s, handler=retry.SWEEP)

    if topics.match_tickets is not None:
        register_matchmaking(app, topics.match_tickets, ctx, producer, send)


TICKETS_BATCH = 1_000
"""``match-tickets`` messages the tickets agent takes per batch (one Redis round trip per queue)."""


def register_matchmaking(app: faust.App, match_tickets: faust.TopicT, ctx: PipelineContext, producer: BatchProducer,
                         send: Send) -> None:
    """The tickets agent and the matchmaker timer (``matchmaking.py``)."""
    settings = ctx.settings
    tickets_topic = match_tickets.get_topic_name()
    mm = Matchmaker.of(ctx, MatchTopicNames(settings.topic(MATCHES), settings.topic(TICKET_EVENTS),
                                            settings.topic(MATCH_TICKETS_DLQ)))

    async def tickets_of(inputs: list[Incoming]) -> list[Outgoing]:
        try:
            return await retry.retrying(lambda: handle_tickets(mm, inputs), "matchmaking tickets",
                                        max_delay_s=settings.retry_max_delay_s, handler=retry.MATCHMAKING,
                                        attempts=settings.handler_attempts)
        except retry.GaveUp:
            if len(inputs) == 1:
                return [dead_letter(mm, inputs[0], INTERNAL_ERROR, "handling the ticket kept raising")]
            return [out for one in inputs for out in await tickets_of([one])]

    @app.agent(match_tickets, name="matchmaking-tickets")
    async def tickets(stream: faust.StreamT[bytes]) -> None:
        async for events in take_batches(stream, TICKETS_BATCH, 0.0):
            out = await tickets_of([incoming(event) for event in events])
            await send(out, "ticket events")
            await faults.at(faults.MM_AFTER_JOIN_BEFORE_ACK)

    async def tick(queue: QueueConfig) -> None:
        try:
            await tick_queue(mm, queue, send)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - one queue's failing tick must not stop the others; retried next tick
            kind = retry.failure_kind(exc)
            metrics.HANDLER_FAILURES.labels(retry.MATCHMAKING, kind).inc()
            log.log(logging.WARNING if kind == retry.TRANSIENT else logging.ERROR, "tick of queue %r failed (%s: %s)",
                    queue.name, type(exc).__name__, exc, exc_info=kind != retry.TRANSIENT)

    async def owned(name: str) -> bool:
        """Whether this worker owns (and ticks) the queue's partition of match-tickets; False before it starts."""
        owned_partitions = assigned_partitions(app, tickets_topic)
        if not owned_partitions or producer.producer is None:
            return False
        try:
            partitions = await producer.partition_count(tickets_topic)
        except Exception as exc:  # noqa: BLE001 - the broker's metadata not there yet: not this tick
            log.warning("matchmaking: the partitions of %s are unknown yet (%s)", tickets_topic, exc)
            return False
        return partition_for(name, partitions) in owned_partitions

    async def ticking(queue: QueueConfig, offset_s: float) -> None:
        # one loop per queue: a tick starts every tick_interval_s (its own time included, unlike a
        # Faust timer, which sleeps the whole interval after each run); the queues' first ticks are
        # spread over the interval, so their ticks do not all compete for the event loop at once
        await asyncio.sleep(offset_s)
        while True:
            started = time.monotonic()
            if await owned(queue.name):
                await tick(queue)
            else:  # not (or no longer) this worker's: a take-over later starts from a full read
                mm.copies.drop(queue.name)
            await asyncio.sleep(max(0.0, queue.tick_interval_s - (time.monotonic() - started)))

    @app.task  # type: ignore[untyped-decorator]  # faust: untyped
    async def matchmaker() -> None:
        queues = list(ctx.queues.values())
        await asyncio.gather(*(ticking(queue, i * queue.tick_interval_s / len(queues)) for i, queue in enumerate(queues)))
