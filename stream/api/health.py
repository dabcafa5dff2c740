"""Kafka's side of ``/health``: a background check (every :data:`CHECK_INTERVAL_S`, never per request)
of the broker and, per partition of ``rounds`` and ``player-updates``, of the worker group's
uncommitted messages and the age of the oldest (read by a client that never joins the group).
``/ready`` reads it; exported as ``ems_consumer_lag_messages`` / ``ems_consumer_lag_seconds``. The
offsets are the group's committed ones, so the age includes up to Faust's commit interval.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from stream.connections import kafka_python_config
from stream.pipeline import metrics
from stream.pipeline.topics import PLAYER_UPDATES, ROUNDS
from stream.settings import Settings

#: Seconds between two checks.
CHECK_INTERVAL_S = 5.0
#: Seconds a check waits for the broker.
CHECK_TIMEOUT_S = 5.0
#: The topics whose lag is reported (names before TOPIC_PREFIX).
LAG_TOPICS = (ROUNDS, PLAYER_UPDATES)
#: Seconds a check waits for the oldest unprocessed record of its lagging partitions.
AGE_TIMEOUT_S = 2.0
#: Bytes fetched per lagging partition to read its oldest record's timestamp (the broker returns
#: at least the record batch holding it, whatever this says).
AGE_FETCH_BYTES = 16 * 1024

TopicPartition_ = tuple[str, int]
"""(full topic name, partition)."""


@dataclass
class KafkaHealth:
    """The last check: reachable or not (with the error), when, and the lag per topic."""

    ok: bool | None = None  # None: not checked yet
    checked_at: float | None = None
    error: str | None = None
    lag: dict[str, int] | None = None
    partitions: dict[TopicPartition_, tuple[int, float | None]] | None = None
    """Per (full topic name, partition): messages not committed, age in seconds of the oldest
    (None: not read); 0 and 0.0 when caught up."""

    def to_dict(self) -> dict[str, Any]:
        seconds: dict[str, float] = {}
        for (topic, _), (_, age) in (self.partitions or {}).items():
            if age is not None:
                seconds[topic] = max(seconds.get(topic, 0.0), age)
        return {"ok": self.ok, "checked_at": self.checked_at, "error": self.error, "lag": self.lag,
                "lag_seconds": seconds if self.partitions is not None else None}


class KafkaProbe:
    """Checks Kafka in a daemon thread; :meth:`health` is the last result (thread-safe: replaced whole)."""

    def __init__(self, settings: Settings, interval_s: float = CHECK_INTERVAL_S) -> None:
        self.settings = settings
        self.interval_s = interval_s
        self._health = KafkaHealth()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kafka-health", daemon=True)
        self._consumer: Any = None
        self._reader: Any = None

    def start(self) -> "KafkaProbe":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def health(self) -> KafkaHealth:
        return self._health

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._health = self.check()
            metrics.CONSUMER_LAG.update(self._health.partitions or {})
            self._stop.wait(self.interval_s)
        self._close()

    def check(self) -> KafkaHealth:
        """One check: committed and end offsets, then the age of each lagging partition's oldest uncommitted
        record (the clients are kept between checks; rebuilt after a failure)."""
        from kafka import TopicPartition

        try:
            if self._consumer is None:  # in the workers' group, never joining it: reads its committed offsets
                self._consumer = self._kafka_consumer(group_id=self.settings.app_id, client_id="ems-health")
            consumer = self._consumer
            consumer.topics()  # refresh metadata
            lag: dict[str, int] = {}
            rows: dict[TopicPartition_, tuple[int, float | None]] = {}
            first: dict[Any, int] = {}  # lagging partition -> its first uncommitted offset
            for name in LAG_TOPICS:
                topic = self.settings.topic(name)
                partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
                if not partitions:
                    continue
                ends = consumer.end_offsets(partitions)
                begins = consumer.beginning_offsets(partitions)
                total = 0
                for tp in partitions:
                    committed = consumer.committed(tp)
                    done = committed if committed is not None else int(begins[tp])
                    behind = max(0, int(ends[tp]) - done)
                    total += behind
                    rows[(topic, tp.partition)] = (behind, 0.0 if behind == 0 else None)
                    if behind:
                        first[tp] = done
                lag[name] = total
            now = time.time()
            for tp, stamp in self._oldest(first).items():
                rows[(tp.topic, tp.partition)] = (rows[(tp.topic, tp.partition)][0], max(0.0, now - stamp))
            return KafkaHealth(True, time.time(), None, lag, rows)
        except Exception as exc:  # noqa: BLE001 - any failure means "Kafka not healthy", shown as text
            self._close()
            return KafkaHealth(False, time.time(), f"{type(exc).__name__}: {exc}"[:300], None)

    def _oldest(self, first: dict[Any, int]) -> dict[Any, float]:
        """The Kafka timestamp (epoch seconds) of the record at each partition's given offset (or
        the first after it), read within :data:`AGE_TIMEOUT_S`; partitions not read are left out."""
        if not first:
            return {}
        if self._reader is None:  # outside any group (assign + seek only), a few KiB per lagging partition
            self._reader = self._kafka_consumer(group_id=None, client_id="ems-health-age", fetch_max_wait_ms=100,
                                                max_partition_fetch_bytes=AGE_FETCH_BYTES,
                                                fetch_max_bytes=AGE_FETCH_BYTES * 8)
        reader = self._reader
        reader.assign(list(first))
        for tp, offset in first.items():
            reader.seek(tp, offset)
        found: dict[Any, float] = {}
        deadline = time.monotonic() + AGE_TIMEOUT_S
        while len(found) < len(first) and (left := deadline - time.monotonic()) > 0:
            for tp, records in reader.poll(timeout_ms=int(left * 1000)).items():
                if tp not in found and records:
                    found[tp] = records[0].timestamp / 1000.0
                    reader.pause(tp)  # one record is enough
        reader.resume(*reader.paused())
        return found

    def _kafka_consumer(self, **config: Any) -> Any:
        from kafka import KafkaConsumer

        return KafkaConsumer(enable_auto_commit=False, bootstrap_timeout_ms=int(CHECK_TIMEOUT_S * 1000), **config,
                             **kafka_python_config(self.settings))

    def _close(self) -> None:
        for client in (self._consumer, self._reader):
            if client is not None:
                try:
                    client.close(autocommit=False)
                except Exception:  # noqa: BLE001 - closing a half-open client
                    pass
        self._consumer = self._reader = None
