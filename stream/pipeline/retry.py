"""Retry a handler call: forever while Redis or Kafka is unreachable, a few times otherwise.

A handler that raised stops its agent's partition (the batch is not acked), so the agents run
each handler call and send through :func:`retrying`, with a bounded exponential backoff:
``transient`` failures (:data:`TRANSIENT_ERRORS`) are warned about and retried forever;
``unexpected`` ones are logged at ERROR with their traceback and, with ``attempts``
(HANDLER_ATTEMPTS), end in :class:`GaveUp`: the agent dead-letters the message
(``internal_error``) and moves on. Logs are rate-limited (:data:`WARN_EVERY_S`); failures are
counted in ``ems_handler_failures_total``, and ``ems_handler_stuck_seconds`` /
``ems_handler_running_seconds`` give the age of the oldest failing / unreturned call.
``CancelledError`` propagates at once. Retrying is safe because every handler is idempotent,
even after a half-done attempt (registration once per round id, a stored fan-out re-sent, a
player's ``last_seq`` checked atomically, events re-emitted from stored results).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import redis.exceptions
from prometheus_client import Gauge

from stream.logsafe import log_safe, log_traceback
from stream.pipeline import metrics
from stream.pipeline.runtime.errors import KAFKA_TRANSIENT_ERRORS

T = TypeVar("T")
log = logging.getLogger(__name__)

FIRST_DELAY_S = 0.05
WARN_EVERY_S = 5.0

TRANSIENT = "transient"
UNEXPECTED = "unexpected"
KINDS = (TRANSIENT, UNEXPECTED)

#: Handler labels of the agents' calls (others may be used; these show 0 from the start).
HANDLERS = PHASE_ONE, PHASE_TWO, SEND, CONFIRM, SWEEP, CORRECTION, MATCHMAKING, OTHER = (
    "phase_one", "phase_two", "send", "confirm_emitted", "sweep", "correction", "matchmaking", "other")


class GaveUp(Exception):
    """A call raised an unexpected exception ``attempts`` times in a row (the last one is ``error``)."""

    def __init__(self, what: str, error: Exception, attempts: int) -> None:
        super().__init__(f"{what} gave up after {attempts} attempt(s): {type(error).__name__}: {error}")
        self.error = error
        self.attempts = attempts

TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError,  # includes BusyLoadingError (Redis replaying its AOF)
    redis.exceptions.TimeoutError,
    redis.exceptions.TryAgainError,
    redis.exceptions.ClusterDownError,
    ConnectionError,
    *KAFKA_TRANSIENT_ERRORS,
)


class CallAges:
    """When each current call of a handler started, exported as the age of the oldest one
    (computed at scrape time: it grows while a call hangs or the retry loop sleeps)."""

    def __init__(self, gauge: Gauge) -> None:
        self._gauge = gauge
        self._since: dict[str, dict[int, float]] = {}

    def watch(self, handler: str) -> None:
        """Export the gauge for ``handler`` (0 while it has no call) and its failure counters."""
        if handler not in self._since:
            self._since[handler] = {}
            self._gauge.labels(handler).set_function(lambda: self.oldest_seconds(handler))
            for kind in KINDS:
                metrics.HANDLER_FAILURES.labels(handler, kind)  # exported as 0 before the first failure
            metrics.REDIS_ERRORS.labels(handler)

    def start(self, handler: str, call: int, at: float) -> None:
        self.watch(handler)
        self._since[handler].setdefault(call, at)

    def stop(self, handler: str, call: int) -> None:
        self._since.get(handler, {}).pop(call, None)

    def oldest_seconds(self, handler: str, now: float | None = None) -> float:
        """Seconds since the oldest current call of ``handler`` started (or first failed); 0 if none."""
        since = self._since.get(handler)
        if not since:
            return 0.0
        return max(0.0, (time.monotonic() if now is None else now) - min(since.values()))


FAILING = CallAges(metrics.HANDLER_STUCK_SECONDS)
"""Calls failing now, since their first failure."""
RUNNING = CallAges(metrics.HANDLER_RUNNING_SECONDS)
"""Calls not returned yet (a hung Redis or Kafka call shows here before it times out), since they started."""
_CALLS = itertools.count()
for _handler in HANDLERS:
    FAILING.watch(_handler)
    RUNNING.watch(_handler)


def failure_kind(exc: BaseException) -> str:
    """``transient`` (Redis or Kafka unreachable) or ``unexpected`` (anything else)."""
    return TRANSIENT if isinstance(exc, TRANSIENT_ERRORS) else UNEXPECTED


async def retrying(attempt: Callable[[], Awaitable[T]], what: str, *, max_delay_s: float,
                   handler: str = OTHER, attempts: int | None = None) -> T:
    """``await attempt()`` until it returns; back off from FIRST_DELAY_S up to ``max_delay_s``.
    ``what`` names the call in the logs, ``handler`` in the metrics (module docstring)."""
    delay = FIRST_DELAY_S
    call = next(_CALLS)
    FAILING.watch(handler)  # exported (0) from a handler's first call
    RUNNING.start(handler, call, time.monotonic())
    started: float | None = None
    failures = 0
    unexpected = 0
    next_log = 0.0
    try:
        while True:
            try:
                result = await attempt()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - every failure is retried; the input is never skipped
                now = time.monotonic()
                if started is None:
                    started = now
                    FAILING.start(handler, call, now)
                failures += 1
                kind = failure_kind(exc)
                metrics.HANDLER_FAILURES.labels(handler, kind).inc()
                if isinstance(exc, redis.exceptions.RedisError):
                    metrics.REDIS_ERRORS.labels(handler).inc()
                unexpected += kind == UNEXPECTED
                if attempts is not None and unexpected >= attempts:
                    log.error("%s raised unexpectedly %d time(s) (%s: %s); giving up", what, unexpected,
                              type(exc).__name__, exc, exc_info=exc)
                    raise GaveUp(what, exc, unexpected) from exc
                if now >= next_log:
                    _log_failure(what, kind, exc, failures, now - started)
                    next_log = now + WARN_EVERY_S
                await asyncio.sleep(delay)
                delay = min(delay * 2.0, max_delay_s)
                continue
            if failures:
                log.warning("%s succeeded after %d failed attempt(s) over %.1fs", what, failures,
                            time.monotonic() - (started or 0.0))
            return result
    finally:
        FAILING.stop(handler, call)
        RUNNING.stop(handler, call)


def _log_failure(what: str, kind: str, exc: Exception, failures: int, failing_s: float) -> None:
    """A warning for a transient failure; an ERROR with the traceback for an unexpected one."""
    if kind == TRANSIENT:
        log.warning("%s failed (%s: %s); retrying for %.1fs so far", what, type(exc).__name__,
                    log_safe(exc, quote=False), failing_s)
    else:
        log.error("%s raised unexpectedly (%s: %s; %d failed attempt(s), %.1fs so far); retrying\n%s", what,
                  type(exc).__name__, log_safe(exc, quote=False), failures, failing_s, log_traceback(exc))
