"""Retry a handler call: forever while Redis or Kafka is unreachable, a few times otherwise.

An agent whose handler raised stops taking its input (``compat.take_batches`` does not ack the
batch: its partition's commits stop there until a rebalance or restart delivers it again), so a
handler must not raise for one bad message. The agents therefore run each handler call and each
send through :func:`retrying`, with a bounded exponential backoff:

* ``transient`` failures (:data:`TRANSIENT_ERRORS`: Redis or Kafka unreachable) are logged as
  warnings and retried forever; they end when the service comes back;
* ``unexpected`` ones (anything else: a message the handler cannot digest, a bug, a race) are
  logged at ERROR with their traceback and retried; with ``attempts`` (the handlers' calls:
  HANDLER_ATTEMPTS) the call gives up after that many unexpected failures and raises
  :class:`GaveUp`, and the agent dead-letters the message (``internal_error``, the exception
  type in the letter's message) and moves on: one bad message never stalls its partition.

Both are rate-limited (one line per :data:`WARN_EVERY_S` per call), counted in
``ems_handler_failures_total{handler,kind}``, and while a call keeps failing
``ems_handler_stuck_seconds{handler}`` reports how long it has been failing (0 when healthy),
for an alert. ``ems_handler_running_seconds{handler}`` is the age of the oldest call not yet
returned, failing or not: a call hung on a Redis that stopped answering shows there at once
(until ``REDIS_SOCKET_TIMEOUT_S`` makes it fail and be retried). ``asyncio.CancelledError`` (shutdown, partition rebalance) is a
``BaseException`` and propagates at once, as do ``KeyboardInterrupt`` and ``SystemExit``.

Retrying is safe because every handler is idempotent, including after a half-done attempt:

* ``phase_one.handle_rounds``: registration is once per ``round_id`` (a retry finds the round
  ``registered`` and redoes its phase one from the same priors: its own ``queued_seq`` mark
  does not hold its barrier, ``mark_queued`` never lowers it, ``save_fanout`` stores once and
  a retry then sends the stored messages) or ``pending``/``rated`` (the stored fan-out is
  re-sent, or nothing happens);
* ``phase_two.handle_updates``: a player whose ``last_seq`` reached the round is not applied
  again (checked atomically in the Lua script); its event is re-emitted from the stored
  results (same content and ``event_id``), recovered from its history if the round's
  bookkeeping never ran;
* sends are re-sent whole (consumers are idempotent), ``confirm_emitted`` adds to a set, and a
  sweep only re-drives what is still incomplete.
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
PHASE_ONE = "phase_one"
PHASE_TWO = "phase_two"
SEND = "send"
CONFIRM = "confirm_emitted"
SWEEP = "sweep"
CORRECTION = "correction"
MATCHMAKING = "matchmaking"
OTHER = "other"
HANDLERS = (PHASE_ONE, PHASE_TWO, SEND, CONFIRM, SWEEP, CORRECTION, MATCHMAKING, OTHER)


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
    """When each current call of a handler started (running, or failing), exported as the age
    of the oldest one: ``ems_handler_running_seconds`` (:data:`RUNNING`) and
    ``ems_handler_stuck_seconds`` (:data:`FAILING`).

    The gauge is computed at scrape time (``set_function``), so it keeps growing while a call
    hangs or the retry loop sleeps; with several calls (one phase-one actor per partition) it
    shows the oldest."""

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

    ``what`` names the call in the logs; ``handler`` is the metrics label. Transient failures
    are retried forever; unexpected ones too without ``attempts``, else :class:`GaveUp` is
    raised at the ``attempts``-th (see the module docstring). ``CancelledError`` propagates."""
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
