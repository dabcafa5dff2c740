"""The pipeline's topics (names from Settings.topic) and their administration: create them on any
Kafka-protocol broker, idempotently (kafka-python's admin client). The worker's Faust topic
objects are declared in :mod:`stream.pipeline.runtime.topics`."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from stream.connections import kafka_python_security
from stream.settings import Settings

ROUNDS = "rounds"
PLAYER_UPDATES = "player-updates"
RATING_CHANGES = "rating-changes"
ROUNDS_DLQ = "rounds-dlq"
CORRECTIONS = "corrections"
ALL = (ROUNDS, PLAYER_UPDATES, RATING_CHANGES, ROUNDS_DLQ, CORRECTIONS)
#: Replication factor of topics created here; 1 fits the embedded single-node broker. A real
#: cluster passes its own (see docker-compose.yml, where Kafka has one node as well).
DEFAULT_REPLICATION = 1
#: Seconds to wait for new topics to appear in the broker's metadata.
METADATA_TIMEOUT_S = 15.0
#: Seconds between two metadata polls.
POLL_INTERVAL_S = 0.1
MATCH_TICKETS = "match-tickets"
MATCHES = "matches"
TICKET_EVENTS = "ticket-events"
MATCH_TICKETS_DLQ = "match-tickets-dlq"
MATCHMAKING = (MATCH_TICKETS, MATCHES, TICKET_EVENTS, MATCH_TICKETS_DLQ)
"""Matchmaking's topics (keys: the queue name), created and subscribed only when QUEUES names a queue."""


def partition_counts(settings: Settings) -> dict[str, int]:
    """Full topic name → partitions: every topic gets PARTITIONS (matchmaking's with QUEUES only)."""
    names = ALL + (MATCHMAKING if settings.queues.strip() else ())
    return {settings.topic(name): settings.partitions for name in names}


def ensure(settings: Settings) -> dict[str, int]:
    """Create the topics that do not exist yet (idempotent); name → partitions as the broker has them."""
    return ensure_topics(settings.kafka_bootstrap, partition_counts(settings), **kafka_python_security(settings))


def ensure_topics(bootstrap: str, topics: Mapping[str, int], *, replication: int = DEFAULT_REPLICATION,
                  timeout_s: float = METADATA_TIMEOUT_S, **client_config: Any) -> dict[str, int]:
    """Create every topic of ``topics`` (name → partitions) that does not exist yet (existing ones are
    left alone); name → partitions as the broker reports them, once all are in its metadata."""
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="ems-topic-admin", **client_config)
    try:
        existing = set(admin.list_topics())
        missing = [NewTopic(name, partitions, replication) for name, partitions in topics.items() if name not in existing]
        if missing:
            admin.create_topics(missing, raise_errors=False)  # a concurrent creator's TopicAlreadyExists is fine
        deadline = time.monotonic() + timeout_s
        while True:  # until every topic is in the broker's metadata with its partitions
            found = {d["name"]: len(d["partitions"]) for d in admin.describe_topics(list(topics))
                     if d.get("error_code", 0) == 0 and d.get("partitions")}
            if all(name in found for name in topics):
                return found
            if time.monotonic() > deadline:
                raise TimeoutError(f"topics not in broker metadata after {timeout_s:.0f} s: "
                                   f"{sorted(set(topics) - set(found))}")
            time.sleep(POLL_INTERVAL_S)
    finally:
        admin.close()

