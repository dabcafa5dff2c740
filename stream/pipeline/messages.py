"""Outgoing Kafka messages as plain values, so handlers stay testable without a broker."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class FanOutMessage:
    """One PlayerUpdate for ``player-updates``: explicit partition, key = first entry's player."""

    partition: int
    key: bytes
    value: bytes


@dataclass(frozen=True)
class RatingChangeMessage:
    """One RatingChange for ``rating-changes``: key = player."""

    key: bytes
    value: bytes


RECORD_OVERHEAD_BYTES = 64 * 1024
"""Room left under MAX_MESSAGE_BYTES for a record's key, headers and framing."""


def value_limit(max_message_bytes: int) -> int:
    """Largest value the worker produces (a fan-out part, a dead letter): MAX_MESSAGE_BYTES less
    room for the record around it (a quarter of it when MAX_MESSAGE_BYTES is small)."""
    return max(1, max_message_bytes - min(RECORD_OVERHEAD_BYTES, max_message_bytes // 4))


Resend = Callable[[list[FanOutMessage]], Awaitable[None]]
"""How the worker sends fan-out messages (set on the context by the agents)."""


@dataclass(frozen=True)
class Origin:
    """Where an input message came from (copied into a dead letter)."""

    topic: str | None = None
    partition: int | None = None
    offset: int | None = None


@dataclass(frozen=True)
class Incoming:
    """An input message as plain values (the agents build it from a Faust event), so the
    handlers and their fallbacks run without Faust."""

    value: bytes
    key: bytes | None = None
    origin: Origin = Origin()
    timestamp: float | None = None
