"""The pipeline's topics (names from Settings.topic) and their creation."""

from __future__ import annotations

from dataclasses import dataclass

import faust

from stream.connections import kafka_python_security
from stream.settings import Settings

ROUNDS = "rounds"
PLAYER_UPDATES = "player-updates"
RATING_CHANGES = "rating-changes"
ROUNDS_DLQ = "rounds-dlq"
CORRECTIONS = "corrections"
ALL = (ROUNDS, PLAYER_UPDATES, RATING_CHANGES, ROUNDS_DLQ, CORRECTIONS)
MATCH_TICKETS = "match-tickets"
MATCHES = "matches"
TICKET_EVENTS = "ticket-events"
MATCH_TICKETS_DLQ = "match-tickets-dlq"
MATCHMAKING = (MATCH_TICKETS, MATCHES, TICKET_EVENTS, MATCH_TICKETS_DLQ)
"""Matchmaking's topics (keys: the queue name), created and subscribed only when QUEUES names a queue."""


@dataclass(frozen=True)
class Topics:
    """Faust topic objects of one app; values and keys are raw bytes (stream.contracts JSON)."""

    rounds: faust.TopicT
    player_updates: faust.TopicT
    rating_changes: faust.TopicT
    rounds_dlq: faust.TopicT
    corrections: faust.TopicT
    match_tickets: faust.TopicT | None = None
    """``match-tickets`` (None without QUEUES: no matchmaking)."""


def partition_counts(settings: Settings) -> dict[str, int]:
    """Full topic name → partitions: every topic gets PARTITIONS (matchmaking's with QUEUES only)."""
    names = ALL + (MATCHMAKING if settings.queues.strip() else ())
    return {settings.topic(name): settings.partitions for name in names}


def declare(app: faust.App, settings: Settings) -> Topics:
    def topic(name: str) -> faust.TopicT:
        return app.topic(settings.topic(name), key_type=bytes, value_type=bytes, key_serializer="raw",
                         value_serializer="raw", partitions=settings.partitions)

    return Topics(topic(ROUNDS), topic(PLAYER_UPDATES), topic(RATING_CHANGES), topic(ROUNDS_DLQ), topic(CORRECTIONS),
                  topic(MATCH_TICKETS) if settings.queues.strip() else None)


def ensure(settings: Settings) -> dict[str, int]:
    """Create the topics that do not exist yet (idempotent); name → partitions as the broker has them."""
    from stream.stack.topics import ensure_topics

    return ensure_topics(settings.kafka_bootstrap, partition_counts(settings), **kafka_python_security(settings))
