"""The worker's Faust topic objects, declared on its app from the names in :mod:`stream.pipeline.topics`."""

from __future__ import annotations

from dataclasses import dataclass

import faust

from stream.pipeline.topics import CORRECTIONS, MATCH_TICKETS, PLAYER_UPDATES, RATING_CHANGES, ROUNDS, ROUNDS_DLQ
from stream.settings import Settings


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


def declare(app: faust.App, settings: Settings) -> Topics:
    """Declare the pipeline's topics on ``app`` (raw bytes in and out; match-tickets only with QUEUES)."""

    def topic(name: str) -> faust.TopicT:
        return app.topic(settings.topic(name), key_type=bytes, value_type=bytes, key_serializer="raw",
                         value_serializer="raw", partitions=settings.partitions)

    return Topics(topic(ROUNDS), topic(PLAYER_UPDATES), topic(RATING_CHANGES), topic(ROUNDS_DLQ), topic(CORRECTIONS),
                  topic(MATCH_TICKETS) if settings.queues.strip() else None)
