"""What the workers send, as plain records built from plain values (testable without Faust):
fan-outs, rating changes and dead letters; and the handlers' :class:`Outbox`, for what they
send outside an input's own handling.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from stream.contracts import DeadLetter
from stream.contracts.correction import Correction
from stream.pipeline.messages import FanOutMessage, Incoming, RatingChangeMessage, value_limit
from stream.pipeline.retry import TRANSIENT_ERRORS

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Outgoing:
    """One message: topic, key, value, and a partition (None: the key's default partition).
    Not frozen: a worker builds one per message it sends (every rating change)."""

    topic: str
    key: bytes | None
    value: bytes
    partition: int | None = None


@dataclass(frozen=True)
class TopicNames:
    """The names of the topics the workers write (``runtime.topics.Topics`` holds the Faust topics)."""

    player_updates: str
    rating_changes: str
    rounds_dlq: str
    corrections: str = "corrections"


Send = Callable[[list[Outgoing], str], Awaitable[None]]
"""Sends records until the broker acknowledged them (retrying), ``what`` naming them in logs."""


class Outbox(Protocol):
    """What the handlers send outside an input's own handling (acknowledged when a send returns),
    and the fan-out's partition count: the worker's ``runtime.producer.WorkerOutbox``, else a
    :class:`ListOutbox`."""

    async def resend(self, messages: list[FanOutMessage]) -> None:
        """Send re-driven (stored) fan-out messages."""

    async def reject(self, letter: DeadLetter) -> None:
        """Send a dead letter found outside an input's own handling (a stored round set aside)."""

    async def partition_count(self) -> int:
        """The ``player-updates`` topic's partition count (the worker's: the broker's metadata)."""


@dataclass
class ListOutbox:
    """An :class:`Outbox` that records what is sent (tests, ``stream backfill``, benchmarks)."""

    partitions: int
    resent: list[FanOutMessage] = field(default_factory=list)
    rejected: list[DeadLetter] = field(default_factory=list)

    async def resend(self, messages: list[FanOutMessage]) -> None:
        self.resent += messages

    async def reject(self, letter: DeadLetter) -> None:
        self.rejected.append(letter)

    async def partition_count(self) -> int:
        return self.partitions


def letter_message(names: TopicNames, max_message_bytes: int, letter: DeadLetter, key: bytes | None,
                   partition: int | None) -> Outgoing:
    """A dead letter to ``rounds-dlq``, cut to fit MAX_MESSAGE_BYTES (its original's prefix)."""
    value = letter.to_json(max_bytes=value_limit(max_message_bytes)).encode()
    return Outgoing(names.rounds_dlq, key, value, partition)


def update_letter(names: TopicNames, max_bytes: int, event: Incoming, reason: str, why: str,
                  original: bytes | None = None) -> Outgoing:
    """A dead letter (to ``rounds-dlq``, same partition, no key) of a ``player-updates`` message,
    or of one of its sections (``original``)."""
    origin = event.origin
    letter = DeadLetter(reason, why, None, event.value if original is None else original, time.time(), origin.topic,
                        origin.partition, origin.offset)
    return letter_message(names, max_bytes, letter, None, origin.partition)


def fanout_messages(names: TopicNames, messages: Sequence[FanOutMessage]) -> list[Outgoing]:
    """PlayerUpdates to their explicit partitions."""
    return [Outgoing(names.player_updates, m.key, m.value, m.partition) for m in messages]


def repair_messages(names: TopicNames, repairs: Sequence[Correction]) -> list[Outgoing]:
    """Corrections the workers publish themselves (phase two's repairs, phase one's inserts of
    late rounds), keyed by ladder."""
    return [Outgoing(names.corrections, c.ladder.encode(), c.to_json().encode()) for c in repairs]


def change_messages(names: TopicNames, events: Sequence[RatingChangeMessage]) -> list[Outgoing]:
    """RatingChanges keyed by player (Kafka's default partition of the key)."""
    return [Outgoing(names.rating_changes, e.key, e.value) for e in events]


async def settle(acks: Sequence[asyncio.Future[object]], sent: list[Outgoing], what: str, send: Send) -> None:
    """Wait for the acknowledgement of messages in flight; if any failed, send them all again
    through ``send``, which retries until it works (consumers are idempotent)."""
    try:
        await asyncio.gather(*acks)
    except Exception as exc:
        level = logging.WARNING if isinstance(exc, TRANSIENT_ERRORS) else logging.ERROR
        log.log(level, "%s failed (%s: %s); sending again", what, type(exc).__name__, exc)
        await send(sent, what)
