"""The pipeline's patches of Faust / aiokafka behaviour and its use of their private attributes.

faust-streaming is pinned (0.15.3); what here reaches into it is written against that version:

* :func:`cap_fetch_wait`: Faust hard-codes aiokafka's ``fetch_max_wait_ms``; :func:`idle_fetch_wait`
  lengthens it while nothing arrives;
* :func:`take_batches`: ``Stream.take_events`` without its idle timer; :func:`incoming`: an
  event as the handlers' plain input;
* :func:`deliver_without_blocking`: a full stream buffer pauses its partition but never blocks
  the delivery of the consumer's other partitions (phase one waiting at its barrier would
  otherwise hold back the ``player-updates`` records it waits for);
* :class:`QuietMonitor`: Faust's monitor without its per-event statistics (nothing reads them);
* the watchdog's reach into the consumer (watchdog.py): :func:`in_consumer_thread`,
  :func:`fetch_positions`, :func:`committed_offsets`, :func:`set_read_offset`,
  :func:`disable_resume`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

import time

import faust
from aiokafka.consumer import fetcher as aiokafka_fetcher
from faust.sensors.monitor import Monitor
from faust.transport.drivers import aiokafka as faust_aiokafka
from mode.utils.futures import notify
from mode.utils.queues import ThrowableQueue

from stream.pipeline.messages import Incoming, Origin

T = TypeVar("T")


def cap_fetch_wait(max_wait_ms: int) -> None:
    """Make Faust's Kafka consumers wait at most ``max_wait_ms`` per fetch.

    faust-streaming 0.15.3 hard-codes ``fetch_max_wait_ms=1500``. Measured against the embedded
    Tansu broker, a waiting aiokafka fetch is not answered when records arrive (measured ≈0.45 s
    per hop with 1500, ≈5 ms under load with 100; an idle hop costs up to the wait), and every
    round crosses two hops. 20 ms (the default) keeps an unloaded 10-player round near 50 ms end to end. The
    consumer keeps the value in ``_fetch_max_wait_ms`` until ``start()`` builds its fetcher, so
    it is set right after construction. Idempotent; affects consumers created afterwards.
    """
    thread_class = faust_aiokafka.AIOKafkaConsumerThread
    original = getattr(thread_class, "_ems_original_create", thread_class._create_worker_consumer)

    def create_worker_consumer(self, transport):  # type: ignore[no-untyped-def]
        consumer = original(self, transport)
        consumer._fetch_max_wait_ms = max_wait_ms
        return consumer

    # setattr: patching Faust's class is not an assignment to typed attributes
    setattr(thread_class, "_ems_original_create", original)
    setattr(thread_class, "_create_worker_consumer", create_worker_consumer)


IDLE_AFTER_S = 1.0
"""Seconds without a record after which a consumer's fetches wait the idle time (:func:`idle_fetch_wait`)."""


def idle_fetch_wait(busy_ms: int, idle_ms: int) -> None:
    """Make this process's aiokafka fetches wait ``idle_ms`` once no record has arrived for
    :data:`IDLE_AFTER_S`, and ``busy_ms`` again from the first record on.

    The embedded broker answers a fetch with no data only at its deadline (see
    :func:`cap_fetch_wait`), so an idle consumer sends one fetch per wait: with the busy 20 ms,
    50 requests a second encoded, sent and decoded by the worker for nothing (most of its idle
    CPU once the agents stopped polling). The idle wait bounds how late the first record after
    a quiet spell is seen; a broker that answers when data arrives (Kafka) is not slowed at all.
    Patches ``Fetcher._proc_fetch_request`` (aiokafka 0.14), whose result says whether the
    response held records; idempotent."""
    fetcher_class = aiokafka_fetcher.Fetcher
    original = getattr(fetcher_class, "_ems_original_proc", fetcher_class._proc_fetch_request)

    async def proc_fetch_request(self, assignment, node_id, request):  # type: ignore[no-untyped-def]
        got_records = await original(self, assignment, node_id, request)
        now = time.monotonic()
        if got_records:
            self._ems_last_records = now
        quiet = now - getattr(self, "_ems_last_records", now) >= IDLE_AFTER_S
        if not hasattr(self, "_ems_last_records"):
            self._ems_last_records = now
        self._fetch_max_wait_ms = idle_ms if quiet else busy_ms
        return got_records

    setattr(fetcher_class, "_ems_original_proc", original)
    setattr(fetcher_class, "_proc_fetch_request", proc_fetch_request)


class DeliveryQueue(ThrowableQueue[Any]):
    """A stream buffer that is never *full* to its producer, Faust's conductor: a record is
    always delivered at once; the buffer's size is bounded by flow control instead.

    The conductor (``faust/transport/conductor.py`` and its Cython twin, faust-streaming 0.15.3)
    hands the consumer's records over one by one, in ONE loop for every partition of the
    worker (``Consumer._drain_messages`` awaits each delivery). A record whose stream buffer is
    full was delivered with an awaited ``put``, so the whole loop waited for that stream to take
    an event. Phase one, waiting at its per-player barrier for ``player-updates`` records (and
    taking no ``rounds`` meanwhile: ``take_batches`` holds its stream while a batch is handled),
    then never received them: the worker stalled (seen with the posterior cache off, 30,000
    duels; the watchdog exited the worker).

    What still bounds the buffer is Faust's pressure flow control, which this keeps as is: at
    ``maxsize / 1.25`` events the partition leaves the consumer's active set (fetched no more),
    and re-enters it once the stream has drained the buffer. Beyond that the buffer only takes
    the rest of the records the consumer already returned for that partition (at most one fetch
    response, ``max_partition_fetch_bytes``: in memory before as well, waiting in the blocked
    loop). Nothing is dropped or reordered; acknowledgements and commits are unchanged."""

    def full(self) -> bool:
        return False


def deliver_without_blocking(app: faust.App) -> None:
    """Make every stream buffer ``app`` creates from now on a :class:`DeliveryQueue` (call it
    before the agents start: Faust creates a channel's buffer when its stream first reads)."""

    def flow_control_queue(maxsize: int | None = None, *, clear_on_resume: bool = False) -> ThrowableQueue[Any]:
        return DeliveryQueue(maxsize=maxsize or 0, flow_control=app.flow_control, clear_on_resume=clear_on_resume)

    # setattr: App.FlowControlQueue is a method; this app's own factory replaces it (no global patch)
    setattr(app, "FlowControlQueue", flow_control_queue)
class QuietMonitor(Monitor):
    """Faust's monitor without its per-event bookkeeping (counters, timings and lookups per
    message and event, the end offset per fetched record): nothing reads them (the Faust web
    views are off; the pipeline's own metrics are metrics.py). Commit, send, rebalance and
    assignment statistics are kept."""

    def on_message_in(self, tp: Any, offset: int, message: Any) -> None:
        pass

    def on_stream_event_in(self, tp: Any, offset: int, stream: Any, event: Any) -> dict[Any, Any] | None:
        return None

    def on_stream_event_out(self, tp: Any, offset: int, stream: Any, event: Any,
                            state: dict[Any, Any] | None = None) -> None:
        pass

    def on_message_out(self, tp: Any, offset: int, message: Any) -> None:
        pass

    def track_tp_end_offset(self, tp: Any, offset: int) -> None:
        pass


def take_batches(stream: faust.StreamT[bytes], max_: int, within: float) -> AsyncIterator[list[faust.EventT[bytes]]]:
    """Batches of up to ``max_`` events of an agent's stream, each handed over at most ``within``
    seconds after its first event arrived; every event is acknowledged once the consumer of the
    batch moves on (as ``Stream.take_events``).

    ``take_events`` wakes up every ``within`` seconds whether events came or not (a 2-5 ms
    timer per actor: most of an idle worker's CPU). Here an empty buffer waits for its first
    event without a timer, and only then for the batch to fill within ``within`` (on one future
    and one timer, not ``wait_for_stopped``'s three tasks). The body is
    ``take_events`` of faust-streaming 0.15.3 with that change (its processor, passive drain,
    manual acks and generator tracking)."""
    faust_stream = cast("faust.Stream[bytes]", stream)
    batches = _take_batches(faust_stream, max_, within)
    faust_stream._active_agens.add(batches)  # closed with the stream, as Faust's own buffers
    return batches


async def _take_batches(stream: faust.Stream[bytes], max_: int,
                        within: float) -> AsyncGenerator[list[faust.EventT[bytes]], None]:
    events: list[faust.EventT[bytes]] = []
    has_events = asyncio.Event()
    full: asyncio.Future[None] | None = None  # the main loop waiting for the batch to fill
    consumed = asyncio.Event()
    consuming: asyncio.Future[None] | None = None
    enable_acks = stream.enable_acks
    channel = aiter(stream.channel)

    async def add_to_buffer(value: Any) -> Any:
        nonlocal consuming
        try:
            if consuming is not None:  # the consumer is handling a batch: wait until it is acked
                try:
                    await consuming
                finally:
                    consuming = None
            event = stream.current_event
            if event is None:
                raise RuntimeError("take_batches found current_event is None")
            events.append(event)
            has_events.set()
            if len(events) >= max_:
                _resolve(full)
                consumed.clear()
                await stream.wait(consumed)  # type: ignore[arg-type]  # mode accepts any awaitable .wait()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            stream.log.exception("Error adding to take buffer: %r", exc)
            await stream.crash(exc)
        return value

    stream.enable_acks = False
    stream.add_processor(add_to_buffer)
    stream._enable_passive(cast("faust.ChannelT[bytes]", channel))
    try:
        while not stream.should_stop:
            if not has_events.is_set():
                await stream.wait_for_stopped(has_events)  # type: ignore[arg-type]  # idle: no timer
            if len(events) < max_ and within > 0:  # one future and one timer, not wait_for_stopped's
                full = stream.loop.create_future()     # three tasks: stop is seen at most `within` late
                timer = stream.loop.call_later(within, _resolve, full)
                try:
                    await full
                finally:
                    timer.cancel()
                    full = None
            if events:
                consuming = stream.loop.create_future()
                batch = list(events)
                try:
                    yield batch
                finally:
                    events.clear()
                    has_events.clear()
                    for event in batch:
                        await stream.ack(event)
                    notify(consuming)
                    consumed.set()
    finally:
        stream.enable_acks = enable_acks
        stream._processors.remove(add_to_buffer)


def _resolve(future: asyncio.Future[None] | None) -> None:
    if future is not None and not future.done():
        future.set_result(None)


def incoming(event: faust.EventT[bytes]) -> Incoming:
    """A Faust event as the handlers' plain input (value, key, where it came from, its timestamp)."""
    message = event.message
    key = cast("bytes | None", event.key)
    return Incoming(event.value, key, Origin(message.topic, message.partition, message.offset),
                    message.timestamp)


# --- the watchdog's reach into Faust's consumer and aiokafka (stream/pipeline/watchdog.py) ----------


def in_consumer_thread(app: faust.App, fn: Callable[..., Awaitable[T]], *args: Any) -> Awaitable[T]:
    """Run the coroutine function ``fn(aiokafka consumer, *args)`` in Faust's consumer thread
    (aiokafka lives in that thread's event loop)."""
    thread = cast(Any, app.consumer)._thread
    return cast("Awaitable[T]", thread.call_thread(fn, thread._ensure_consumer(), *args))


def fetch_positions(consumer: Any, tps: Sequence[Any]) -> dict[Any, int | None]:
    """In the consumer thread: aiokafka's fetch position of each partition (None: no valid one),
    from its subscription state (aiokafka 0.14)."""
    subscription = consumer._subscription.subscription
    assignment = subscription.assignment if subscription is not None else None
    out: dict[Any, int | None] = {}
    for tp in tps:
        state = assignment.state_value(tp) if assignment is not None else None
        out[tp] = state.position if state is not None and state.has_valid_position else None
    return out


def disable_resume(consumer: Any, tp: Any) -> None:
    """In the consumer thread: make resuming the partition a no-op while this assignment lasts
    (TEST-ONLY: a stall no self-heal can clear, FAULT_POINT stall_rounds_partition_forever)."""
    consumer._subscription.subscription.assignment.state_value(tp).resume = lambda: None


def committed_offsets(app: faust.App) -> Mapping[Any, int]:
    """Faust's record of the offsets it committed, per Faust TP (no request)."""
    return cast("Mapping[Any, int]", cast(Any, app.consumer)._committed_offset)


def set_read_offset(app: faust.App, tp: Any, offset: int | None) -> None:
    """Set Faust's read offset of a partition (after a seek, so the records fetched again are
    not dropped as already read)."""
    cast(Any, app.consumer)._read_offset[tp] = offset
