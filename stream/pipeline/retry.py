"""Retry while Redis or Kafka is unreachable: the worker waits, it never skips input.

Faust acks an event once the agent moves on, even when the handler raised, so a handler
failing on a Redis restart would silently drop its round. The agents therefore run each
handler and each send through :func:`retrying`: transient connection errors are retried with
a bounded exponential backoff, forever (the handlers are idempotent, so re-running a
half-done attempt is harmless); other exceptions propagate.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import redis.exceptions
from aiokafka.errors import KafkaConnectionError, KafkaTimeoutError, NotEnoughReplicasError, RequestTimedOutError

T = TypeVar("T")
log = logging.getLogger(__name__)

FIRST_DELAY_S = 0.05
WARN_EVERY_S = 5.0

TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError,  # includes BusyLoadingError (Redis replaying its AOF)
    redis.exceptions.TimeoutError,
    redis.exceptions.TryAgainError,
    redis.exceptions.ClusterDownError,
    ConnectionError,
    KafkaConnectionError,
    KafkaTimeoutError,
    RequestTimedOutError,
    NotEnoughReplicasError,
)


async def retrying(attempt: Callable[[], Awaitable[T]], what: str, *, max_delay_s: float) -> T:
    """``await attempt()`` until it does not raise a transient error; back off up to ``max_delay_s``."""
    delay = FIRST_DELAY_S
    started = time.monotonic()
    next_warning = started
    while True:
        try:
            return await attempt()
        except TRANSIENT_ERRORS as exc:
            now = time.monotonic()
            if now >= next_warning:
                log.warning("%s failed (%s: %s); retrying for %.1fs so far", what, type(exc).__name__, exc,
                            now - started)
                next_warning = now + WARN_EVERY_S
            await asyncio.sleep(delay)
            delay = min(delay * 2.0, max_delay_s)
