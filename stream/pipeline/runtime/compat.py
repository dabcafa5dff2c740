"""The pipeline's patches of Faust / aiokafka behaviour and its use of their private attributes.

faust-streaming is pinned (0.15.3); what here reaches into it is written against that version:

* :func:`cap_fetch_wait`: Faust hard-codes aiokafka's ``fetch_max_wait_ms``; :func:`idle_fetch_wait`
  lengthens it while nothing arrives;
* :func:`direct_delivery`: the consumer puts a fetched record on its streams' buffers without
  Faust's tasks per record when nothing can make that wait;
* :class:`Refetch` (in that loop, with the embedded broker only: ``EMBEDDED_BROKER``): records a
  fetch skipped (the embedded broker does) are fetched again, not acknowledged unseen as Faust's
  gap handling does;
* :func:`take_batches`: an agent's events in batches read from its stream's buffer directly,
  never acknowledging an event that was not handled; :func:`incoming`: an event as the
  handlers' plain input;
* :func:`deliver_without_blocking`: a full stream buffer pauses its partition but never blocks
  the delivery of the consumer's other partitions (phase one waiting at its barrier would
  otherwise hold back the ``player-updates`` records it waits for);
* :class:`QuietMonitor`: Faust's monitor without its per-event statistics (nothing reads them);
* :class:`PromptTableManager`: Faust's table manager without the second it sleeps before the
  consumer may subscribe (a second of every worker start);
* :func:`leave_group_on_stop`: whether a stopping consumer sends aiokafka's LeaveGroup;
* the watchdog's reach into the consumer (watchdog.py): :func:`in_consumer_thread`,
  :func:`fetch_positions`, :func:`committed_offsets`, :func:`set_read_offset`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

import time

import faust
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
    """Make Faust's Kafka consumers wait at most ``max_wait_ms`` per fetch.

    faust-streaming 0.15.3 hard-codes ``fetch_max_wait_ms=1500``. Measured against the embedded
    Tansu broker, a waiting aiokafka fetch is not answered when records arrive (measured ≈0.45 s
    per hop with 1500, ≈5 ms under load with 100; an idle hop costs up to the wait), and every
    round crosses two hops (CONSUMER_FETCH_MAX_WAIT_MS, 10 ms by default, bounds the cost). The
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


def leave_group_on_stop(leave: bool) -> None:
    """Whether a consumer that stops (or unsubscribes) leaves its group with a LeaveGroup request
    (aiokafka's ``GroupCoordinator._maybe_leave_group``, the default) or only forgets its
    generation, so the coordinator drops it when its session expires (LEAVE_GROUP_ON_STOP).

    Against the embedded Tansu broker, new members joining a group whose members all left with
    LeaveGroup can loop in JoinGroup / SyncGroup with no member elected leader, for minutes
    (measured with plain aiokafka consumers: stream/stack/README.md); a member dropped at its
    session timeout leaves no such state. Process-wide (the worker has one consumer group);
    idempotent; affects consumers created before or after."""
    original = getattr(GroupCoordinator, "_ems_original_leave", GroupCoordinator._maybe_leave_group)

    async def forget_generation(self):  # type: ignore[no-untyped-def]
        self.reset_generation()

    # setattr: patching aiokafka's class is not an assignment to typed attributes
    setattr(GroupCoordinator, "_ems_original_leave", original)
    setattr(GroupCoordinator, "_maybe_leave_group", original if leave else forget_generation)


IDLE_AFTER_S = 1.0
"""Seconds without a record after which a consumer's fetches wait the idle time (:func:`idle_fetch_wait`)."""


def idle_fetch_wait(busy_ms: int, idle_ms: int) -> None:
    """Make this process's aiokafka fetches wait ``idle_ms`` once no record has arrived for
    :data:`IDLE_AFTER_S`, and ``busy_ms`` again from the first record on.

    The embedded broker answers a fetch with no data only at its deadline (see
    :func:`cap_fetch_wait`), so an idle consumer sends one fetch per wait: with the busy 10 ms,
    100 requests a second encoded, sent and decoded by the worker for nothing (most of its idle
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


def direct_delivery(refetch_skipped: bool) -> None:
    """Make Faust's consumers put each fetched record on its streams' buffers in the fetch loop
    itself when nothing can make that wait, instead of Faust's task per record.

    ``Consumer._drain_messages`` (faust-streaming 0.15.3) delivers every record with
    ``wait_first(conductor.on_message(message), suspend_flow.wait())``: four tasks and an
    ``asyncio.wait`` per record (plus ``_stopped`` and ``_crashed`` waits), about half of
    Faust's CPU per message on a busy worker. The replacement is that loop with
    :class:`_DirectDelivery` tried first; it does, in the same step as its checks, what the
    conductor's handler would (an event per channel, put without waiting, the partition paused
    at high pressure). Any record it cannot prove safe to deliver that way (flow control or the
    consumer's flow suspended, a consumer generation other than the record's, a channel that
    decodes, a queue that is full, Faust's producer buffer over its limit, the conductor
    updating its handlers) goes through Faust's own ``wait_first`` delivery, as before.
    Read offsets, commit-every and the periodic yield are Faust's. With ``refetch_skipped`` (the
    embedded broker, ``EMBEDDED_BROKER``), a gap in a partition's offsets is fetched again first
    (:class:`Refetch`); without, a gap is Faust's to handle at once, as Kafka never makes one
    but for transactions or compaction. Idempotent."""
    setattr(faust_consumer.Consumer, "_drain_messages", _drain_messages)
    setattr(faust_consumer.Consumer, "_ems_refetch_attempts", REFETCH_ATTEMPTS if refetch_skipped else 0)


ConductorHandler: Any = getattr(faust_conductor, "ConductorHandler", None)
"""Faust's compiled per-partition delivery handler (None without its Cython extension)."""


def _raw_bytes(channel: Any) -> bool:
    """Whether ``channel`` (a topic) decodes a record as Faust's ``Schema`` with raw bytes keys and
    values does: key and value unchanged (``want_bytes`` of bytes), so the event needs no decode."""
    schema = getattr(channel, "schema", None)
    return (type(schema) is faust.Schema and schema.key_type is bytes and schema.value_type is bytes
            and schema.key_serializer == "raw" and schema.value_serializer == "raw")


class _DirectDelivery:
    """``ConductorHandler.__call__`` of a record, done in place when it would not wait (see
    :func:`direct_delivery`); what it reads of the app is looked up once per fetch loop."""

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
        """Put ``message`` on its streams' buffers now, as the conductor's handler does when it
        does not wait; False (nothing done) when it might wait or decode: Faust's delivery then."""
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
        for channel in channels:
            if not _raw_bytes(channel) or channel.queue.full():
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
                                    await self._thread.call_thread(_seek, self._thread._ensure_consumer(), tp, hole)
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
"""Fetches of a partition that may again skip the same missing offsets before the gap is taken
as real (:class:`Refetch`): Faust's own handling then (the gap acknowledged)."""


class Refetch:
    """What the fetch loop does when a partition's next record is past the offset after the last
    one delivered (a *gap*): seek back and fetch the missing records again, instead of Faust's
    acknowledging the gap (its records then never reach a stream).

    The embedded Tansu broker makes such gaps: with two producers appending to one partition
    (each worker's phase one fans out to every ``player-updates`` partition), a fetch can return a
    batch appended after another one that is acknowledged but not yet readable, so the consumer's
    position passes the earlier batch, whose records it never sees (measured: a few per 20,000
    records, ``bench/fetch_skips.py``; re-read from the start, the partition holds every record at
    contiguous offsets). A ``player-updates`` message so skipped would leave its rounds to the
    sweeper (SWEEP_TIMEOUT_S) and every later round of their players to a chain gap (``chains.py``).
    Kafka without transactions or compaction never skips an offset, so there this never runs;
    where a gap is real, it is accepted after :data:`REFETCH_ATTEMPTS` fetch loops that still
    skip it."""

    def __init__(self, attempts: int = REFETCH_ATTEMPTS) -> None:
        self._attempts = attempts
        """Fetch loops that may skip the same hole before it is taken as real (0: at once)."""
        self._holes: dict[Any, tuple[int, int, int]] = {}
        """Per partition: (first missing offset, attempts, fetch loop of the last seek)."""

    def retry(self, tp: Any, hole: int, loop: int) -> bool:
        """Whether to fetch ``tp`` again from ``hole`` (its records past it, fetched in fetch loop
        ``loop``, are not delivered): until ``attempts`` (:data:`REFETCH_ATTEMPTS`) loops skipped it."""
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
        """Whether the seek back is still to do in fetch loop ``loop`` (once per loop: the rest of
        the loop's records of ``tp`` are past the hole too)."""
        hole, attempts, last = self._holes[tp]
        if last == loop:
            return False
        self._holes[tp] = (hole, attempts, loop)
        return True

    def done(self, tp: Any) -> None:
        """``tp``'s next record came: nothing missing any more."""
        if self._holes:
            self._holes.pop(tp, None)


async def _seek(consumer: Any, tp: Any, offset: int) -> None:
    """In the consumer thread: fetch ``tp`` from ``offset`` next (aiokafka drops what it fetched
    beyond), if it is still assigned."""
    from aiokafka import TopicPartition

    partition = TopicPartition(tp.topic, tp.partition)
    if partition in consumer.assignment():
        consumer.seek(partition, offset)


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


class PromptTableManager(TableManager):
    """Faust's table manager (``App(TableManager=...)``), started without Faust's one-second sleep.

    Faust's ``TableManager.on_start`` sleeps a second (time for tables declared late to be
    added) before it registers the tables' changelogs, and the conductor subscribes the consumer
    (the group join) only once that is done: a second of every worker start and restart, before
    its group join. The pipeline keeps no Faust tables (Redis is the state, app.py), and every
    topic and agent is declared by ``create_app`` before the worker starts, so there is nothing
    to wait for; the rest is Faust's ``on_start`` as written."""

    async def on_start(self) -> None:
        if not self.should_stop:
            await self._update_channels()
            await self.recovery.start()


def take_batches(stream: faust.StreamT[bytes], max_: int, within: float,
                 gate: Gate | None = None) -> AsyncIterator[list[faust.EventT[bytes]]]:
    """Batches of up to ``max_`` events of an agent's stream, each handed over at most ``within``
    seconds after its first event arrived; a batch's events are acknowledged when the consumer
    of the batch asks for the next one, and only then.

    The batches are read from the stream's buffer (its channel's queue) directly, every event
    ready at once, instead of through Faust's stream iterator (``Stream._c_aiter`` and the
    passive drainer of ``Stream.take_events``, faust-streaming 0.15.3), which costs a loop
    iteration, a processor call and an ack check per event. An empty buffer waits for its first
    event without a timer, then up to ``within`` for the batch to fill (one future and one timer).

    Unlike Faust's iterator, an event is never acknowledged unless it was handled:

    * an event taken while the app's flow control is suspended (a rebalance) or whose message
      is of an earlier consumer generation is dropped WITHOUT an ack (Faust acks such skipped
      events, which lets a later commit pass offsets nobody handled); the consumer seeks back to
      the committed offsets after a rebalance, so the record is delivered again in the new
      generation (to this worker or to the partition's new owner);
    * the same holds for the events of a batch still being gathered when flow is suspended;
    * a batch whose consumer never moved on (the agent raised or was cancelled: the generator
      is closed at its ``yield``) is not acknowledged (Faust's ``take_events`` acks it in a
      ``finally``); its records are delivered again after the next rebalance or restart.

    ``gate`` (``shutdown.Gate``): counts the batches in hand; once closed (SIGTERM), no new batch is
    taken (a batch gathered meanwhile is dropped unacknowledged, delivered again)."""
    faust_stream = cast("faust.Stream[bytes]", stream)
    batches = _take_batches(faust_stream, max_, within, gate)
    faust_stream._active_agens.add(batches)  # closed with the stream, as Faust's own buffers
    return batches


class _Intake:
    """What :func:`_take_batches` does to each event it takes from a stream's buffer: the checks
    of Faust's stream iterator (flow control, consumer generation) and its message tracking."""

    def __init__(self, stream: faust.Stream[bytes]) -> None:
        app = stream.app
        self.app = app
        self.stream = stream
        self.is_active = app.flow_control.is_active
        self.acking_topics: set[str] = cast(Any, app.topics)._acking_topics
        self.add_unacked = cast(Any, app.consumer)._unacked_messages.add
        self.on_message_in = stream._on_message_in
        self.dropped = 0

    def current(self, event: Any) -> bool:
        """Whether ``event`` may be handled now: flow is active and its message is of the
        consumer's current generation (else it is dropped, never acked)."""
        return bool(self.is_active()) and event.message.generation_id == self.app.consumer_generation_id

    def take(self, value: Any, into: list[faust.EventT[bytes]]) -> None:
        """Add a buffered ``value`` (a Faust event) to ``into`` if current; track its message as
        Faust's iterator does (pending ack, for ``wait_empty`` and the commit bookkeeping)."""
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
    """Move buffered events into ``batch`` until it holds ``max_`` (the rest stays buffered:
    Faust's pressure flow control still bounds the buffer); ``get_nowait`` raises what was
    thrown into the channel and resumes a paused partition once the buffer has drained."""
    while len(batch) < max_ and not queue.empty():
        intake.take(queue.get_nowait(), batch)


async def _until_ready(queue: ThrowableQueue[Any], loop: asyncio.AbstractEventLoop, timeout: float | None) -> None:
    """Wait until ``queue`` holds an item (or an error thrown into it), at most ``timeout``
    seconds: ``asyncio.Queue.get``'s wait (a getter future the next put wakes) without taking
    the item, and with one timer instead of ``wait_for``'s task."""
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


def committed_offsets(app: faust.App) -> Mapping[Any, int]:
    """Faust's record of the offsets it committed, per Faust TP (no request)."""
    return cast("Mapping[Any, int]", cast(Any, app.consumer)._committed_offset)


def set_read_offset(app: faust.App, tp: Any, offset: int | None) -> None:
    """Set Faust's read offset of a partition (after a seek, so the records fetched again are
    not dropped as already read)."""
    cast(Any, app.consumer)._read_offset[tp] = offset


def assigned_partitions(app: faust.App, topic: str) -> set[int]:
    """The partitions of ``topic`` assigned to this worker's consumer now (empty before the first
    assignment): the matchmaker ticks the queues whose ``match-tickets`` partition it owns."""
    try:
        assignment = app.consumer.assignment()
    except Exception:  # noqa: BLE001 - no consumer yet (the app is starting): owns nothing
        return set()
    return {tp.partition for tp in assignment if tp.topic == topic}


def graceful_worker(app: faust.App, loglevel: str, on_sigterm: Callable[[], Awaitable[object]]) -> faust.Worker:
    """A Faust worker whose SIGTERM first awaits ``on_sigterm`` (``shutdown.Drain.run``: finish the
    batches in hand, commit), then stops as Faust does (mode's ``Worker._on_sigterm``, a private
    method overridden here). A second SIGTERM while draining is ignored; SIGINT stops at once."""
    from faust import Worker

    class GracefulWorker(Worker):
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
