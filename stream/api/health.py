"""Kafka's side of ``/health``: a background check of the broker and of the workers' lag.

A thread checks every :data:`CHECK_INTERVAL_S` (never per request, so ``/health`` stays as cheap
as a Redis PING): can the broker be reached, and how many messages of ``rounds`` and
``player-updates`` the worker group (``APP_ID``) has not committed yet. ``/health`` shows the last
result and its age.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from stream.connections import kafka_python_config
from stream.pipeline.topics import PLAYER_UPDATES, ROUNDS
from stream.settings import Settings

#: Seconds between two checks.
CHECK_INTERVAL_S = 5.0
#: Seconds a check waits for the broker.
CHECK_TIMEOUT_S = 5.0
#: The topics whose lag is reported (names before TOPIC_PREFIX).
LAG_TOPICS = (ROUNDS, PLAYER_UPDATES)


@dataclass
class KafkaHealth:
    """The last check: reachable or not (with the error), when, and the lag per topic."""

    ok: bool | None = None  # None: not checked yet
    checked_at: float | None = None
    error: str | None = None
    lag: dict[str, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "checked_at": self.checked_at, "error": self.error, "lag": self.lag}


class KafkaProbe:
    """Checks Kafka in a daemon thread; :meth:`health` is the last result (thread-safe: replaced whole)."""

    def __init__(self, settings: Settings, interval_s: float = CHECK_INTERVAL_S) -> None:
        self.settings = settings
        self.interval_s = interval_s
        self._health = KafkaHealth()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kafka-health", daemon=True)
        self._consumer: Any = None

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
            self._stop.wait(self.interval_s)
        self._close()

    def check(self) -> KafkaHealth:
        """One check: the group's committed offsets and the topics' end offsets (the client is kept
        between checks, so an idle API costs little; rebuilt after a failure)."""
        from kafka import TopicPartition

        try:
            consumer = self._client()
            consumer.topics()  # refresh metadata
            lag: dict[str, int] = {}
            for name in LAG_TOPICS:
                topic = self.settings.topic(name)
                partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
                if not partitions:
                    continue
                ends = consumer.end_offsets(partitions)
                begins = consumer.beginning_offsets(partitions)
                committed = {tp: consumer.committed(tp) for tp in partitions}
                lag[name] = sum(max(0, int(ends[tp]) - (committed[tp] if committed[tp] is not None else int(begins[tp])))
                                for tp in partitions)
            return KafkaHealth(True, time.time(), None, lag)
        except Exception as exc:  # noqa: BLE001 - any failure means "Kafka not healthy", shown as text
            self._close()
            return KafkaHealth(False, time.time(), f"{type(exc).__name__}: {exc}"[:300], None)

    def _client(self) -> Any:
        """A consumer in the workers' group that never joins it (no subscribe, no poll): it only
        reads the group's committed offsets."""
        from kafka import KafkaConsumer

        if self._consumer is None:
            self._consumer = KafkaConsumer(group_id=self.settings.app_id, client_id="ems-health",
                                           enable_auto_commit=False,
                                           bootstrap_timeout_ms=int(CHECK_TIMEOUT_S * 1000),
                                           **kafka_python_config(self.settings))
        return self._consumer

    def _close(self) -> None:
        if self._consumer is not None:
            try:
                self._consumer.close(autocommit=False)
            except Exception:  # noqa: BLE001 - closing a half-open client
                pass
        self._consumer = None
