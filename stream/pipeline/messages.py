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


Resend = Callable[[list[FanOutMessage]], Awaitable[None]]
"""How the worker sends fan-out messages (set on the context by the agents)."""
