"""The pipeline's patches of Faust / aiokafka behaviour and its use of their private attributes.

Written against the pinned faust-streaming 0.15.3 / aiokafka 0.14.0 (stream/dependencies.py); each patch
is named for what it fixes, and every private attribute the watchdog reaches is behind a function here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

import faust
from aiokafka import TopicPartition
from aiokafka.consumer import fetcher as aiokafka_fetcher
from aiokafka.consumer.group_coordinator import GroupCoordinator
from faust.sensors.monitor import Monitor
from faust.tables.manager import TableManager
from faust.transport import consumer as faust_consumer
from faust.transport import conductor as faust_conductor
from faust.transport.drivers import aiokafka as faust_aiokafka
from faust.types import EventT
from mode.utils.queues import ThrowableQueue

from stream.pipeline.messages import Incoming, Origin
from stream.pipeline.shutdown import Gate

T = TypeVar("T")


def cap_fetch_wait(max_wait_ms: int) -> None:
    """Make Faust's Kafka consumers wait at most ``max_wait_ms`` per fetch (Faust hard-codes 1500 ms; the
    embedded broker answers a waiting fetch only at its deadline, ≈0.45 s per hop measured with 1500).
    Set right after construction, before ``start()`` builds the fetcher. Idempotent."""
    thread_class = faust_aiokafka.AIOKafkaConsumerThread
    original = getattr(thread_class, "_ems_original_create", thread_class._create_worker_consumer)

    def create_worker_consumer(self, transport):  # type: ignore[no-untyped-def]
        consumer = original(self, transport)
        consumer._fetch_max_wait_ms = max_wait_ms
        return consumer

    # setattr: patching Faust's class is not an assignment to typed attributes
    setattr(thread_class, "_ems_original_create", original)
    setattr(thread_class, "_create_worker_consumer", create_worker_consumer)


def leave_group_on_stop(leave: bool) -> None:
    """Whether a stopping consumer sends aiokafka's LeaveGroup (the default) or only forgets its generation,
    to be dropped at its session timeout (LEAVE_GROUP_ON_STOP): on the embedded broker, members joining a
    group whose members all left can loop for minutes with no leader (stream/stack/README.md). Process-wide."""
    original = getattr(GroupCoordinator, "_ems_original_leave", GroupCoordinator._maybe_leave_group)

    async def forget_generation(self):  # type: ignore[no-untyped-def]
        self.reset_generation()

    # setattr: patching aiokafka's class is not an assignment to typed attributes
    setattr(GroupCoordinator, "_ems_original_leave", original)
    setattr(GroupCoordinator, "_maybe_leave_group", original if leave else forget_generation)


IDLE_AFTER_S = 1.0
"""Seconds without a record after which a consumer's fetches wait the idle time (:func:`idle_fetch_wait`)."""


def idle_fetch_wait(busy_ms: int, idle_ms: int) -> None:
    """Make aiokafka's fetches wait ``idle_ms`` once no record has arrived for :data:`IDLE_AFTER_S`, ``busy_ms``
    again from the next record: an idle worker then sends fewer empty fetches (most of its idle CPU) to a broker
    that answers them only at their deadline. Patches ``Fetcher._proc_fetch_request``; idempotent."""
    fetcher_class = aiokafka_fetcher.Fetcher
    original = getattr(fetcher_class, "_ems_original_proc", fetcher_class._proc_fetch_request)

    async def proc_fetch_request(self, assignment, node_id, request):  # type: ignore[no-untyped-def]
        got_records = await original(self, assignment, node_id, request)
        now = time.monotonic()
        if got_records or not hasattr(self, "_ems_last_records"):
            self._ems_last_records = now
        self._fetch_max_wait_ms = idle_ms if now - self._ems_last_records >= IDLE_AFTER_S else busy_ms
        return got_records

    setattr(fetcher_class, "_ems_original_proc", original)
    setattr(fetcher_class, "_proc_fetch_request", proc_fetch_request)


def direct_delivery(refetch_skipped: bool) -> None:
    """Make Faust's consumers put each fetched record on its streams' buffers in the fetch loop itself
    (:class:`_DirectDelivery`) when nothing can make that wait, instead of ``Consumer._drain_messages``'s
    ``wait_first`` per record (four tasks, about half of Faust's CPU per message); any other record goes
    Faust's way. ``refetch_skipped`` (EMBEDDED_BROKER): a gap in offsets is fetched again first (:class:`Refetch`)."""
    setattr(faust_consumer.Consumer, "_drain_messages", _drain_messages)
    setattr(faust_consumer.Consumer, "_ems_refetch_attempts", REFETCH_ATTEMPTS if refetch_skipped else 0)


ConductorHandler: Any = getattr(faust_conductor, "ConductorHandler", None)
"""Faust's compiled per-partition delivery handler (None without its Cython extension)."""


class _DirectDelivery:
    """``ConductorHandler.__call__`` of a record, done in place when it would not wait (:func:`direct_delivery`)."""

    def __init__(self, consumer: Any) -> None:
        app = consumer.app
        self.consumer = consumer
        self.app = app
        self.suspend_flow = consumer.suspend_flow
        self.flow_control_active = app.flow_control.is_active
        conductor = app.topics
        self.handlers_updating = conductor._tp_to_callback_lock.locked
        self.handlers = conductor._tp_to_callback  # cleared and refilled in place by the conductor
        event_class = app.conf.Event
        self.create_event: Callable[[Any, Any, Any, Any], Any] = (app.create_event if type(app).create_event is not faust.App.create_event
                             else lambda key, value, headers, message: event_class(app, key, value, headers, message))
        buffer = app.producer.buffer
        if app.conf.producer_threaded:
            self.producer_busy: Callable[[], bool] = lambda: buffer.size > buffer.max_messages
        else:  # ProducerBuffer.size without reading the setting per record
            self.producer_busy = lambda: len(buffer.pending._queue) > buffer.max_messages

    def __call__(self, message: Any) -> bool:
        """Put ``message`` on its streams' buffers now; False (nothing done) when it might wait or decode."""
        consumer = self.consumer
        if (self.suspend_flow.is_set() or not consumer.flow_active or not self.flow_control_active()
                or message.generation_id != self.app.consumer_generation_id or self.handlers_updating()):
            return False
        handler = self.handlers.get(message.tp)
        if type(handler) is not ConductorHandler or self.producer_busy():
            return False
        channels = handler.channels
        if not channels:
            return False
        for channel in channels:  # each a topic of raw bytes keys and values (its events need no decode), not full
            schema = getattr(channel, "schema", None)
            if not (type(schema) is faust.Schema and schema.key_type is bytes and schema.value_type is bytes
                    and schema.key_serializer == "raw" and schema.value_serializer == "raw") or channel.queue.full():
                return False
        message.refcount += len(channels)
        key, value, headers = message.key, message.value, message.headers
        on_pressure_high, on_pressure_drop = handler.on_pressure_high, handler.on_pressure_drop
        for channel in channels:  # an event per channel, as the handler without cython_optimizations
            channel.queue.put_nowait_enhanced(self.create_event(key, value, headers, message),
                                              on_pressure_high=on_pressure_high, on_pressure_drop=on_pressure_drop)
        return True


async def _drain_messages(self: Any, fetcher: Any) -> None:  # pragma: no cover  # Faust's loop, see direct_delivery
    callback = self.callback
    getmany = self.getmany
    consumer_should_stop = self._stopped.is_set
    fetcher_should_stop = fetcher._stopped.is_set
    get_read_offset = self._read_offset.__getitem__
    set_read_offset = self._read_offset.__setitem__
    flag_consumer_fetching = faust_consumer.CONSUMER_FETCHING
    set_flag = self.diag.set_flag
    unset_flag = self.diag.unset_flag
    commit_every = self._commit_every
    acks_enabled_for = self.app.topics.acks_enabled_for
    yield_every = 100
    num_since_yield = 0
    sleep = asyncio.sleep
    deliver_now = _DirectDelivery(self)
    refetch = Refetch(self._ems_refetch_attempts)  # set by direct_delivery: 0 but on the embedded broker
    rounds = 0  # fetch loops so far (Refetch counts its attempts in them)
    try:
        while not (consumer_should_stop() or fetcher_should_stop()):
            set_flag(flag_consumer_fetching)
            ait = cast(AsyncIterator[Any], getmany(timeout=1.0))
            rounds += 1
            await sleep(0)  # Faust: self.sleep(0), a wait_for task per fetch
            if not self.should_stop:
                async for tp, message in ait:
                    num_since_yield += 1
                    if num_since_yield > yield_every:
                        await sleep(0)
                        num_since_yield = 0
                    offset = message.offset
                    r_offset = get_read_offset(tp)
                    if r_offset is not None and offset == r_offset + 1:
                        refetch.done(tp)
                    if r_offset is None or offset >= r_offset:
                        gap = offset - (r_offset or 0)
                        if gap > 1 and r_offset:
                            hole = r_offset + 1
                            if refetch.retry(tp, hole, rounds):  # fetch the skipped records again
                                if refetch.seek_now(tp, rounds):
                                    self.log.info("%s: the fetch skipped offsets %d to %d: fetching from %d again", tp,
                                                  hole, offset - 1, hole)
                                    await self._thread.call_thread(seek_partitions, self._thread._ensure_consumer(),
                                                                   {(tp.topic, tp.partition): hole})
                                continue
                            if acks_enabled_for(message.topic):
                                await self._add_gap(tp, r_offset + 1, offset)
                        if commit_every is not None:
                            if self._n_acked >= commit_every:
                                self._n_acked = 0
                                await self.commit()
                        if not deliver_now(message):
                            await self.wait_first(callback(message), self.suspend_flow.wait())
                        set_read_offset(tp, offset)
                    else:
                        self.log.dev("DROPPED MESSAGE ROFF %r: k=%r v=%r", offset, message.key, message.value)
                unset_flag(flag_consumer_fetching)
    except self.consumer_stopped_errors:
        if self.transport.app.should_stop:
            self.log.info("Broker stopped consumer, shutting down...")
            return
        raise
    except asyncio.CancelledError:
        if self.transport.app.should_stop:
            self.log.info("Consumer shutting down for user cancel.")
            return
        raise
    except Exception as exc:
        self.log.exception("Drain messages raised: %r", exc)
        raise
    finally:
        unset_flag(flag_consumer_fetching)


REFETCH_ATTEMPTS = 20
"""Fetch loops that may skip the same missing offsets before the gap is taken as real (Faust's handling then)."""


class Refetch:
    """A gap in a partition's offsets (next record past the one after the last delivered): seek back and
    fetch the missing records again instead of Faust's acknowledging it. The embedded broker makes such gaps
    with two producers on a partition (a few per 20,000 records, bench/fetch_skips.py); Kafka never does."""

    def __init__(self, attempts: int) -> None:
        self._attempts = attempts
        """Fetch loops that may skip the same hole before it is taken as real (0: at once)."""
        self._holes: dict[Any, tuple[int, int, int]] = {}
        """Per partition: (first missing offset, attempts, fetch loop of the last seek)."""

    def retry(self, tp: Any, hole: int, loop: int) -> bool:
        """Whether to fetch ``tp`` again from ``hole`` (seen in fetch loop ``loop``): until ``attempts`` loops did."""
        first, attempts, last = self._holes.get(tp, (hole, 0, -1))
        if first != hole:
            attempts, last = 0, -1
        if last != loop:
            attempts += 1
        if attempts > self._attempts:
            self._holes.pop(tp, None)
            return False
        self._holes[tp] = (hole, attempts, last)
        return True

    def seek_now(self, tp: Any, loop: int) -> bool:
        """Whether the seek back is still to do in fetch loop ``loop`` (once per loop)."""
        hole, attempts, last = self._holes[tp]
        if last == loop:
            return False
        self._holes[tp] = (hole, attempts, loop)
        return True

    def done(self, tp: Any) -> None:
        """``tp``'s next record came: nothing missing any more."""
        if self._holes:
            self._holes.pop(tp, None)


async def seek_partitions(consumer: Any, offsets: Mapping[tuple[str, int], int | None], resume: bool = False) -> None:
    """In the consumer thread: seek each still-assigned (topic, partition) to its offset (None: keep the
    position), and with ``resume`` resume it in aiokafka (its fetcher skips a paused partition)."""
    assigned = set(consumer.assignment())
    for (topic, partition), offset in offsets.items():
        tp = TopicPartition(topic, partition)
        if tp in assigned:
            if offset is not None:
                consumer.seek(tp, offset)
            if resume:
                consumer.resume(tp)


class DeliveryQueue(ThrowableQueue[Any]):
    """A stream buffer never *full* to Faust's conductor, which delivers every partition's records in ONE loop:
    an awaited ``put`` on a full buffer held back all of them (phase one, waiting at its barrier for
    ``player-updates`` records, stalled the worker). Faust's pressure flow control still bounds the buffer
    (the partition is paused at ``maxsize / 1.25``); nothing is dropped or reordered."""

    def full(self) -> bool:
        return False


def deliver_without_blocking(app: faust.App) -> None:
    """Make every stream buffer ``app`` creates from now on (before the agents start) a :class:`DeliveryQueue`."""

    def flow_control_queue(maxsize: int | None = None, *, clear_on_resume: bool = False) -> ThrowableQueue[Any]:
        return DeliveryQueue(maxsize=maxsize or 0, flow_control=app.flow_control, clear_on_resume=clear_on_resume)

    # setattr: App.FlowControlQueue is a method; this app's own factory replaces it (no global patch)
    setattr(app, "FlowControlQueue", flow_control_queue)


class QuietMonitor(Monitor):
    """Faust's monitor without its per-event bookkeeping, which nothing reads (the pipeline's metrics are
    metrics.py); commit, send, rebalance and assignment statistics are kept."""

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


class PromptTableManager(TableManager):
    """Faust's table manager without the second ``on_start`` sleeps (for tables declared late) before the
    consumer may join its group: the pipeline keeps no Faust tables and declares everything in ``create_app``."""

    async def on_start(self) -> None:
        if not self.should_stop:
            await self._update_channels()
            await self.recovery.start()


def take_batches(stream: faust.StreamT[bytes], max_: int, within: float,
                 gate: Gate | None = None) -> AsyncIterator[list[faust.EventT[bytes]]]:
    """Batches of up to ``max_`` events of an agent's stream, at most ``within`` seconds after the first, read from
    its buffer directly (Faust's iterator costs a loop, a processor call and an ack check per event). A batch is
    acked when its consumer asks for the next one: never an event dropped as stale (during a rebalance, or of an
    earlier generation: Faust acks those) nor a batch whose agent raised; those come again. ``gate``: SIGTERM's."""
    faust_stream = cast("faust.Stream[bytes]", stream)
    batches = _take_batches(faust_stream, max_, within, gate)
    faust_stream._active_agens.add(batches)  # closed with the stream, as Faust's own buffers
    return batches


class _Intake:
    """Faust's stream iterator's checks of a buffered event (flow control, consumer generation) and its tracking."""

    def __init__(self, stream: faust.Stream[bytes]) -> None:
        app = stream.app
        self.app = app
        self.is_active = app.flow_control.is_active
        self.acking_topics: set[str] = cast(Any, app.topics)._acking_topics
        self.add_unacked = cast(Any, app.consumer)._unacked_messages.add
        self.on_message_in = stream._on_message_in
        self.dropped = 0

    def current(self, event: Any) -> bool:
        """Whether ``event`` may be handled now: flow active, message of the current consumer generation."""
        return bool(self.is_active()) and event.message.generation_id == self.app.consumer_generation_id

    def take(self, value: Any, into: list[faust.EventT[bytes]]) -> None:
        """Add a buffered Faust event to ``into`` if current, its message tracked as pending ack as Faust does."""
        if not isinstance(value, EventT):
            raise TypeError(f"take_batches expects Faust events in its stream's buffer, got {type(value)!r}")
        if not self.current(value):
            self.dropped += 1
            return
        message = value.message
        if message.topic in self.acking_topics and not message.tracked:
            message.tracked = True
            self.add_unacked(message)
            self.on_message_in(message.tp, message.offset, message)
        into.append(value)


async def _take_batches(stream: faust.Stream[bytes], max_: int, within: float,
                        gate: Gate | None = None) -> AsyncGenerator[list[faust.EventT[bytes]], None]:
    channel = stream.channel
    queue = cast(ThrowableQueue[Any], cast(Any, channel).queue)
    loop = stream.loop
    intake = _Intake(stream)
    started_by_aiter = await stream.maybe_start()
    try:
        while not stream.should_stop:
            batch: list[faust.EventT[bytes]] = []
            while not batch:  # idle: wait for the first event, no timer
                await _until_ready(queue, loop, None)
                _take_ready(queue, intake, batch, max_)
            if len(batch) < max_ and within > 0:
                deadline = loop.time() + within
                while len(batch) < max_ and (remaining := deadline - loop.time()) > 0:
                    await _until_ready(queue, loop, remaining)
                    _take_ready(queue, intake, batch, max_)
            current = [event for event in batch if intake.current(event)]
            if len(current) < len(batch):  # a rebalance came meanwhile: its stale events dropped
                intake.dropped += len(batch) - len(current)
                if not current:
                    continue
                batch = current
            if gate is not None:
                if gate.closed:  # SIGTERM while gathering: not handled, not acked
                    await gate.park()
                gate.taken()
            try:
                stream.events_total += len(batch)
                yield batch
                for event in batch:  # the consumer moved on: the batch was handled
                    await stream.ack(event)
            finally:
                if gate is not None:
                    gate.done()
            if gate is not None:
                await gate.park()
    except StopAsyncIteration:  # the actor was told to stop (Faust throws it into the channel)
        return
    finally:
        if intake.dropped:
            stream.log.info("dropped %d buffered event(s) of an earlier consumer generation or taken "
                            "during a rebalance, unacknowledged (delivered again)", intake.dropped)
        stream._channel_stop_iteration(channel)
        if started_by_aiter:
            await stream.stop()
            stream.service_reset()


def _take_ready(queue: ThrowableQueue[Any], intake: _Intake, batch: list[faust.EventT[bytes]], max_: int) -> None:
    """Move buffered events into ``batch`` until it holds ``max_``; ``get_nowait`` raises what was thrown into
    the channel and resumes a paused partition once the buffer has drained."""
    while len(batch) < max_ and not queue.empty():
        intake.take(queue.get_nowait(), batch)


async def _until_ready(queue: ThrowableQueue[Any], loop: asyncio.AbstractEventLoop, timeout: float | None) -> None:
    """Wait until ``queue`` holds an item (or an error thrown into it), at most ``timeout`` seconds:
    ``asyncio.Queue.get``'s wait without taking the item, one timer instead of ``wait_for``'s task."""
    if not queue.empty():
        return
    getters = cast(Any, queue)._getters
    getter = loop.create_future()
    getters.append(getter)
    timer = loop.call_later(timeout, _resolve, getter) if timeout is not None else None
    try:
        await getter
    except BaseException:
        getter.cancel()
        if not queue.empty() and not getter.cancelled():
            cast(Any, queue)._wakeup_next(getters)
        raise
    finally:
        if timer is not None:
            timer.cancel()
        try:
            getters.remove(getter)
        except ValueError:
            pass


def _resolve(future: asyncio.Future[None]) -> None:
    """Wake ``future``'s waiter at its deadline (unless something woke it first)."""
    if not future.done():
        future.set_result(None)


def incoming(event: faust.EventT[bytes]) -> Incoming:
    """A Faust event as the handlers' plain input (value, key, where it came from, its timestamp)."""
    message = event.message
    key = cast("bytes | None", event.key)
    return Incoming(event.value, key, Origin(message.topic, message.partition, message.offset),
                    message.timestamp)


# --- the watchdog's reach into Faust's consumer and aiokafka (stream/pipeline/runtime/watchdog.py) ----------


def in_consumer_thread(app: faust.App, fn: Callable[..., Awaitable[T]], *args: Any) -> Awaitable[T]:
    """Run the coroutine function ``fn(aiokafka consumer, *args)`` in Faust's consumer thread (aiokafka's loop)."""
    thread = cast(Any, app.consumer)._thread
    return cast("Awaitable[T]", thread.call_thread(fn, thread._ensure_consumer(), *args))


def fetch_positions(consumer: Any, tps: Sequence[Any]) -> dict[Any, int | None]:
    """In the consumer thread: aiokafka's fetch position of each partition (None: no valid one)."""
    subscription = consumer._subscription.subscription
    assignment = subscription.assignment if subscription is not None else None
    out: dict[Any, int | None] = {}
    for tp in tps:
        state = assignment.state_value(tp) if assignment is not None else None
        out[tp] = state.position if state is not None and state.has_valid_position else None
    return out


def committed_offsets(app: faust.App) -> Mapping[Any, int]:
    """Faust's record of the offsets it committed, per Faust TP (no request)."""
    return cast("Mapping[Any, int]", cast(Any, app.consumer)._committed_offset)


def set_read_offset(app: faust.App, tp: Any, offset: int | None) -> None:
    """Set Faust's read offset of a partition (after a seek: the records fetched again are not dropped as read)."""
    cast(Any, app.consumer)._read_offset[tp] = offset


def assigned_partitions(app: faust.App, topic: str) -> set[int]:
    """The partitions of ``topic`` assigned to this worker's consumer now (empty before the first assignment)."""
    try:
        assignment = app.consumer.assignment()
    except Exception:  # noqa: BLE001 - no consumer yet (the app is starting): owns nothing
        return set()
    return {tp.partition for tp in assignment if tp.topic == topic}


def graceful_worker(app: faust.App, loglevel: str, on_sigterm: Callable[[], Awaitable[object]]) -> faust.Worker:
    """A Faust worker whose SIGTERM first awaits ``on_sigterm`` (``shutdown.Drain.run``: finish the
    batches in hand, commit), then stops as Faust does (mode's ``Worker._on_sigterm``, a private
    method overridden here). A second SIGTERM while draining is ignored; SIGINT stops at once."""

    class GracefulWorker(faust.Worker):
        _draining = False

        def _on_sigterm(self) -> None:
            if self._draining:
                return
            self._draining = True
            stop = super()._on_sigterm

            async def drain_then_stop() -> None:
                try:
                    await on_sigterm()
                finally:
                    stop()

            asyncio.ensure_future(drain_then_stop(), loop=self.loop)

    return cast(faust.Worker, GracefulWorker(app, loglevel=loglevel))
