"""The Faust application, built from Settings (one app per worker process). Faust keeps only Kafka offsets; all
state lives in Redis (no Faust tables: the embedded broker's ListOffsets makes changelog recovery unreliable).
"""

from __future__ import annotations

import gc
import logging
import tempfile
from dataclasses import dataclass

import faust
import faust.types.auth

from stream import dependencies
from stream.connections import kafka_bootstrap, kafka_protocol, kafka_ssl_context
from stream.engine import warm_up
from stream.pipeline.runtime import agents, watchdog
from stream.pipeline.runtime.compat import (PromptTableManager, QuietMonitor, cap_fetch_wait, deliver_without_blocking,
                                            direct_delivery, idle_fetch_wait, leave_group_on_stop)
from stream.pipeline.runtime.producer import BATCH_BYTES, BatchProducer, WorkerOutbox
from stream.pipeline.context import PipelineContext
from stream.pipeline.health import FLUSH_S
from stream.pipeline.outbox import TopicNames
from stream.pipeline.shutdown import Drain
from stream.pipeline.worker_status import TICK_S, WorkerStatus
from stream.pipeline.runtime.topics import Topics, declare
from stream.settings import Settings


log = logging.getLogger(__name__)


@dataclass
class Pipeline:
    """A Faust app with the pipeline's topics and agents registered, and the handlers' context."""

    app: faust.App
    topics: Topics
    ctx: PipelineContext
    status: WorkerStatus
    """Heartbeat, assignment, drain: what /live and /ready read (``status.py``)."""
    drain: Drain
    """SIGTERM's drain (``shutdown.py``)."""


def faust_broker(settings: Settings) -> list[str]:
    """Faust's ``broker`` argument: one ``kafka://host:port`` URL per bootstrap server."""
    return [f"kafka://{host}" for host in kafka_bootstrap(settings)]


def faust_credentials(settings: Settings) -> faust.types.auth.CredentialsT | None:
    """Faust's ``broker_credentials`` (handed to aiokafka), the TLS and SASL options of
    :func:`stream.connections.aiokafka_config` in Faust's spelling (docs/security.md); None for PLAINTEXT.
    ``faust.SASLCredentials`` reports SASL_PLAINTEXT when given no ``ssl_context``."""
    protocol = kafka_protocol(settings)
    if protocol == "PLAINTEXT":
        return None
    context = kafka_ssl_context(settings)
    if protocol.startswith("SASL"):
        return faust.SASLCredentials(username=settings.kafka_sasl_username, password=settings.kafka_sasl_password,
                                     mechanism=settings.kafka_sasl_mechanism.upper(), ssl_context=context)
    return faust.SSLCredentials(context)


async def freeze_heap() -> None:
    """Collect, then ``gc.freeze`` the ~190,000 objects of the worker's start (a Faust app task): a full
    collection walked them all, 110-180 ms stalls of the only event loop (measured); never walked again."""
    gc.collect()
    gc.freeze()


def create_app(settings: Settings, *, datadir: str | None = None) -> Pipeline:
    """The worker's Faust app, its topics, agents and timers registered, the engine's compiled loops loaded before
    any input; refuses another Faust, mode or aiokafka than the pinned ones (compat.py patches them)."""
    dependencies.check(dependencies.RUNTIME)
    warm_up()
    cap_fetch_wait(settings.consumer_fetch_max_wait_ms)
    idle_fetch_wait(settings.consumer_fetch_max_wait_ms,
                    max(settings.consumer_idle_fetch_wait_ms, settings.consumer_fetch_max_wait_ms))
    direct_delivery(settings.embedded_broker)  # no tasks per fetched record; Refetch on the embedded broker only
    leave_group_on_stop(settings.leave_group_on_stop)
    app = faust.App(
        settings.app_id,
        broker=faust_broker(settings),
        broker_credentials=faust_credentials(settings),
        store="memory://",
        datadir=datadir or tempfile.mkdtemp(prefix="ems-faust-"),
        web_enabled=False,  # the read API is served by stream.api.server (its own thread) instead
        monitor=QuietMonitor(),  # no per-event Faust statistics: nothing reads them (compat.QuietMonitor)
        TableManager=PromptTableManager,  # no tables: the group join starts a second sooner (compat.py)
        topic_partitions=settings.partitions,
        topic_replication_factor=1,
        topic_allow_declare=True,
        consumer_auto_offset_reset="earliest",
        # Do not wait for in-flight events before a rebalance: phase one may be parked in the
        # per-player barrier waiting for player-updates that only get consumed once the
        # rebalance is over (a deadlock, seen after a worker was killed). Every handler is
        # idempotent, so the un-acked event is simply processed again by the new owner.
        stream_wait_empty=False,
        broker_session_timeout=settings.broker_session_timeout_s,
        broker_heartbeat_interval=settings.broker_heartbeat_s,
        producer_max_request_size=settings.max_message_bytes,
        # aiokafka's send() waits for a full per-partition batch to be delivered before it
        # accepts more; with the default 16 KiB a 10,000-event round waited on ~200 round trips.
        producer_max_batch_size=BATCH_BYTES,
        consumer_max_fetch_size=settings.max_message_bytes,
        stream_buffer_maxsize=settings.stream_buffer_maxsize,
    )
    deliver_without_blocking(app)  # a full stream buffer never blocks another stream's input (compat.py)
    topics = declare(app, settings)
    outbox = WorkerOutbox(BatchProducer(settings), TopicNames(*(topic.get_topic_name() for topic in (
        topics.player_updates, topics.rating_changes, topics.rounds_dlq, topics.corrections))))
    ctx = PipelineContext.from_settings(settings, outbox=outbox)
    if ctx.queues:  # the matchmaker's odds table built now, not by the first tick
        from stream.matchmaking.odds import warm_up as warm_up_matchmaking

        warm_up_matchmaking()
    status = WorkerStatus()
    drain = Drain(status)
    agents.register(app, topics, ctx, outbox, drain)
    app.task(freeze_heap)
    watchdog.register(app, settings)  # stalled-partition detection (watchdog.py)

    @app.timer(interval=TICK_S, name="heartbeat")  # type: ignore[untyped-decorator]  # faust: untyped
    async def heartbeat() -> None:
        """Tick ``status`` from the pipeline's loop: the heartbeat, assignment and rebalancing state."""
        rebalancing = bool(app.rebalancing) or app.rebalancing_count == 0
        try:
            assigned = frozenset((tp.topic, tp.partition) for tp in app.consumer.assignment())
        except Exception:  # noqa: BLE001 - the consumer is not started yet
            assigned = None
        status.tick(rebalancing=rebalancing, assigned=assigned)

    @app.timer(interval=FLUSH_S, name="rating-health")  # type: ignore[untyped-decorator]  # faust: untyped
    async def rating_health() -> None:
        """Score and record the rounds rating health keeps once FLUSH_S old, also when no phase-one batch comes."""
        if not ctx.health.calls and not ctx.health.pending:
            return
        try:
            await ctx.health.flush(ctx.store.client)
        except Exception as exc:  # noqa: BLE001 - Redis down: kept for the next flush
            log.warning("rating health not recorded (%s: %s): kept for the next try", type(exc).__name__, exc)

    return Pipeline(app, topics, ctx, status, drain)

