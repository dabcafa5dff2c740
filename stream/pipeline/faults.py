"""Deterministic fault points for tests (FAULT_POINT / FAULT_MARKER; off by default).

A fault point is a named place in the worker. When ``FAULT_POINT`` names it, the first worker
to get there creates the ``FAULT_MARKER`` file (exclusively, so the fault fires once across
restarts and across workers sharing the file) and then either crashes on the spot with
``os._exit(137)`` (no cleanup, no offset commit: what ``kill -9`` does at that instant) or,
for the ``drop_*`` points, lets the caller lose one message; the ``stall_*`` points make the
worker's consumer stop fetching a ``rounds`` partition (the watchdog must notice, watchdog.py).
The ``raise_*`` points make a handler raise :class:`InjectedFault` (what a bug or a race
does) :data:`RAISE_TIMES` times in a row, then let it work: the worker must retry, not move
past its input. Production never sets FAULT_POINT.
"""

from __future__ import annotations

import logging
import os

from stream.settings import Settings

log = logging.getLogger(__name__)

CRASH_EXIT_CODE = 137
"""Exit status of a fault crash (the shell's status of a SIGKILLed process)."""

#: Crash points, in the order a round meets them.
AFTER_REGISTER_BEFORE_FANOUT = "after_register_before_fanout"
AFTER_PRIORS_BEFORE_FANOUT_STORED = "after_priors_before_fanout_stored"
"""The barrier passed and the performances are computed; neither the players' queued marks nor
the fan-out are stored (phase one writes both in one round trip)."""
AFTER_FANOUT_STORED_BEFORE_SEND = "after_fanout_stored_before_send"
AFTER_FANOUT_SENT_BEFORE_ACK = "after_fanout_sent_before_ack"
PHASE_TWO_AFTER_REDIS_BEFORE_EMIT = "phase_two_after_redis_before_emit"
PHASE_TWO_AFTER_EMIT_BEFORE_ACK = "phase_two_after_emit_before_ack"
CORRECTION_MID_RERATE = "correction_mid_rerate"
"""A correction holds its ladder, its plan and trail are stored, half of its re-rate's writes are
sent (``corrections._write``: every re-rated round's results and fan-out, no player yet), no
event: the redelivered correction must finish it. Not in CRASH_POINTS (those a stream of rounds
meets): tests/faults/test_corrections_kill.py."""
IN_BATCH_STORE = "in_batch_store"
"""Phase one of a batch with several rounds to rate dies while its store is half written (the
store is one pipeline, not a transaction): the first half of the rounds' queued marks and
fan-outs stored, the next round's queued marks only (``phase_one.crash_in_batch_store``)."""
BATCH_CRASH_POINTS = (IN_BATCH_STORE,)

#: Crash points of a matchmaking tick (stream/pipeline/matchmaking.py), in the order a tick meets them.
MM_AFTER_JOIN_BEFORE_ACK = "mm_after_join_before_ack"
"""Joins and cancels applied in Redis, their events not sent, the tickets' input not acked."""
MM_AFTER_FORM_BEFORE_COMMIT = "mm_after_form_before_commit"
"""A tick read the pool and formed its matches; nothing of them is recorded."""
MM_AFTER_COMMIT_BEFORE_SEND = "mm_after_commit_before_send"
"""A tick's matches are committed (tickets out of the pool, players in match, records in the outbox), nothing sent."""
MM_AFTER_SEND_BEFORE_MARK = "mm_after_send_before_mark"
"""A tick's records are acknowledged by the broker, the outbox not cleared: they are sent again."""
MM_CRASH_POINTS = (MM_AFTER_JOIN_BEFORE_ACK, MM_AFTER_FORM_BEFORE_COMMIT, MM_AFTER_COMMIT_BEFORE_SEND,
                   MM_AFTER_SEND_BEFORE_MARK)
CRASH_POINTS = (AFTER_REGISTER_BEFORE_FANOUT, AFTER_PRIORS_BEFORE_FANOUT_STORED, AFTER_FANOUT_STORED_BEFORE_SEND,
                AFTER_FANOUT_SENT_BEFORE_ACK, PHASE_TWO_AFTER_REDIS_BEFORE_EMIT, PHASE_TWO_AFTER_EMIT_BEFORE_ACK)

#: Loss points: the worker goes on, but one thing is lost (what a framework bug could do).
DROP_ONE_FANOUT_MESSAGE = "drop_one_fanout_message"
"""The first fan-out message phase one sends is silently not sent (the round stays pending)."""
DROP_ROUND_AFTER_REGISTER = "drop_round_after_register"
"""The first round registered is abandoned and its input acked (the round stays registered)."""
DROP_POINTS = (DROP_ONE_FANOUT_MESSAGE, DROP_ROUND_AFTER_REGISTER)

#: Raise points: the handler raises InjectedFault RAISE_TIMES times in a row, then works again.
RAISE_IN_PHASE_ONE = "raise_in_phase_one"
"""Phase one raises where AFTER_PRIORS_BEFORE_FANOUT_STORED is (the round registered, its
priors read and performances computed, nothing of its fan-out stored)."""
RAISE_IN_PHASE_TWO = "raise_in_phase_two"
"""Phase two's handler raises after it stored a batch's effects, before its events are sent."""
RAISE_POINTS = (RAISE_IN_PHASE_ONE, RAISE_IN_PHASE_TWO)

#: Poison points: the handler raises InjectedFault EVERY time it meets the first round that got there
#: (what a message the code cannot digest does): the worker must dead-letter it and move on.
RAISE_ALWAYS_IN_PHASE_ONE = "raise_always_in_phase_one"
"""Phase one raises for one round where RAISE_IN_PHASE_ONE does, every attempt."""
RAISE_ALWAYS_IN_PHASE_TWO = "raise_always_in_phase_two"
"""Phase two raises for every batch holding an update of one round, every attempt."""
RAISE_ALWAYS_POINTS = (RAISE_ALWAYS_IN_PHASE_ONE, RAISE_ALWAYS_IN_PHASE_TWO)
RAISE_TIMES = 3
"""How many times in a row a raise point raises: the first time this process meets it (and the
marker did not exist) and the next RAISE_TIMES - 1 times (in practice the retries of the same
input: a phase-one actor retries its round before anything else)."""

#: Stall points (stream/pipeline/watchdog.py): the worker's consumer stops fetching one partition.
STALL_ROUNDS_PARTITION = "stall_rounds_partition"
"""The lowest ``rounds`` partition with a committed offset, in the first worker to have one, is
paused in aiokafka without Faust knowing (what faust-streaming's rebalance bug looks like): it
is never fetched again, with no error. The watchdog's self-heal (seek + resume) clears it."""
STALL_ROUNDS_PARTITION_FOREVER = "stall_rounds_partition_forever"
"""As STALL_ROUNDS_PARTITION, and resuming it does nothing while the assignment lasts: only the
watchdog's exit (STALL_EXIT) and a restart clear it."""
STALL_POINTS = (STALL_ROUNDS_PARTITION, STALL_ROUNDS_PARTITION_FOREVER)

_RAISE_AT = {AFTER_PRIORS_BEFORE_FANOUT_STORED: RAISE_IN_PHASE_ONE}
"""Raise points placed where a crash point is (``crash_point`` checks both)."""

ALL_POINTS = CRASH_POINTS + BATCH_CRASH_POINTS + MM_CRASH_POINTS + (CORRECTION_MID_RERATE,) + DROP_POINTS + RAISE_POINTS + STALL_POINTS


class InjectedFault(RuntimeError):
    """The exception of a raise point (an unexpected error, not a transient one)."""


_raised: dict[str, int] = {}


def fires(settings: Settings, point: str) -> bool:
    """True exactly once (across processes sharing FAULT_MARKER) if FAULT_POINT is ``point``."""
    if settings.fault_point != point:
        return False
    if not settings.fault_marker:
        raise ValueError("FAULT_POINT needs FAULT_MARKER (the file that makes the fault fire once)")
    try:
        fd = os.open(settings.fault_marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.write(fd, point.encode())
    os.fsync(fd)
    os.close(fd)
    log.warning("fault point %s fires", point)
    return True


def crash_point(settings: Settings, point: str) -> None:
    """Crash the process here (exit 137, nothing flushed or committed) if the fault fires; or
    raise, if FAULT_POINT is the raise point placed here (``_RAISE_AT``)."""
    if fires(settings, point):
        os._exit(CRASH_EXIT_CODE)
    if point in _RAISE_AT:
        raise_point(settings, _RAISE_AT[point])


def raise_point(settings: Settings, point: str) -> None:
    """Raise InjectedFault if FAULT_POINT is ``point`` and this process has not raised it
    RAISE_TIMES times yet (the first raise needs the marker: once across processes). Every raise
    appends a line to the marker, so a test can count them."""
    if settings.fault_point != point:
        return
    count = _raised.get(point, 0)
    if count >= RAISE_TIMES:
        return
    if count == 0 and not fires(settings, point):
        _raised[point] = RAISE_TIMES  # another process (or run) had it
        return
    _raised[point] = count + 1
    with open(settings.fault_marker, "a") as marker:
        marker.write(f"\nraise {count + 1}/{RAISE_TIMES}")
    raise InjectedFault(f"fault point {point}: injected failure {count + 1}/{RAISE_TIMES}")


_poisoned: dict[str, str] = {}


def raise_always(settings: Settings, point: str, key: str) -> None:
    """Raise InjectedFault if FAULT_POINT is ``point`` and ``key`` (a round id) is the first key
    this process met here after the marker fired; every raise appends a line to the marker."""
    if settings.fault_point != point:
        return
    if point not in _poisoned:
        if not fires(settings, point):
            _poisoned[point] = ""  # another process (or run) had it
            return
        _poisoned[point] = key
    if not key or _poisoned[point] != key:
        return
    with open(settings.fault_marker, "a") as marker:
        marker.write(f"\nraise always {key}")
    raise InjectedFault(f"fault point {point}: injected failure for round {key}")
