"""The fault suite's hook on the fault seam (stream/pipeline/faults.py): deterministic faults named
by FAULT_POINT, made to fire once by FAULT_MARKER.

When FAULT_POINT names a place, the first worker to get there creates the FAULT_MARKER file
(exclusively, so the fault fires once across restarts and across workers sharing the file) and
then either ends itself on the spot with ``os._exit(137)`` (no cleanup, no offset commit: what
``kill -9`` does at that instant), or, at a ``drop_*`` place, makes the caller lose one message;
the ``stall_*`` points make the worker's consumer stop fetching a ``rounds`` partition (the
watchdog must notice). The ``raise_*`` points make a handler raise ``InjectedFault`` (what a bug
or a race does) :data:`RAISE_TIMES` times in a row, then let it work: the worker must retry, not
move past its input; the ``raise_always_*`` points raise every time for the first round that got
there (a poison message: it must be dead-lettered). IN_BATCH_STORE writes what a worker killed in
the middle of its batch's store pipeline leaves, then ends the process.

A worker runs with the hook as ``python -m tests.faults.injection worker ...`` (the harness does
so when its environment has FAULT_POINT); a test in the same process calls :func:`install`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stream.pipeline import faults
from stream.pipeline.runtime.compat import in_consumer_thread
from tests.store_calls import mark_queued

log = logging.getLogger(__name__)

CRASH_EXIT_CODE = 137
"""Exit status of a fault crash (the shell's status of a SIGKILLed process)."""
RAISE_TIMES = 3
"""How many times in a row a raise point raises: the first time this process meets it (and the
marker did not exist) and the next RAISE_TIMES - 1 times (in practice the retries of the same
input: a phase-one actor retries its round before anything else)."""
CRASH_POINTS = (faults.AFTER_REGISTER_BEFORE_FANOUT, faults.AFTER_PRIORS_BEFORE_FANOUT_STORED,
                faults.AFTER_FANOUT_STORED_BEFORE_SEND, faults.AFTER_FANOUT_SENT_BEFORE_ACK,
                faults.PHASE_TWO_AFTER_REDIS_BEFORE_EMIT, faults.PHASE_TWO_AFTER_EMIT_BEFORE_ACK)
"""Crash points, in the order a round meets them."""
BATCH_CRASH_POINTS = (faults.IN_BATCH_STORE,)
MM_CRASH_POINTS = (faults.MM_AFTER_JOIN_BEFORE_ACK, faults.MM_AFTER_FORM_BEFORE_COMMIT,
                   faults.MM_AFTER_COMMIT_BEFORE_SEND, faults.MM_AFTER_SEND_BEFORE_MARK)
"""Crash points of a matchmaking tick, in the order a tick meets them."""
DROP_POINTS = (faults.DROP_ONE_FANOUT_MESSAGE, faults.DROP_ROUND_AFTER_REGISTER)
RAISE_POINTS = (faults.RAISE_IN_PHASE_ONE, faults.RAISE_IN_PHASE_TWO)
RAISE_ALWAYS_POINTS = (faults.RAISE_ALWAYS_IN_PHASE_ONE, faults.RAISE_ALWAYS_IN_PHASE_TWO)
STALL_POINTS = (faults.STALL_ROUNDS_PARTITION, faults.STALL_ROUNDS_PARTITION_FOREVER)
"""Both stall where the watchdog has observed the partitions (the place STALL_ROUNDS_PARTITION)."""
KILL_POINTS = (*CRASH_POINTS, *MM_CRASH_POINTS, faults.CORRECTION_MID_RERATE)
RAISE_AT = {faults.RAISE_IN_PHASE_ONE: faults.AFTER_PRIORS_BEFORE_FANOUT_STORED,
            faults.RAISE_IN_PHASE_TWO: faults.RAISE_IN_PHASE_TWO}
"""Where each raise point raises (phase one's where AFTER_PRIORS_BEFORE_FANOUT_STORED is)."""
RAISE_ALWAYS_AT = {faults.RAISE_ALWAYS_IN_PHASE_ONE: faults.AFTER_PRIORS_BEFORE_FANOUT_STORED,
                   faults.RAISE_ALWAYS_IN_PHASE_TWO: faults.RAISE_ALWAYS_IN_PHASE_TWO}


@dataclass
class Injector:
    """The hook: the fault ``point`` (a FAULT_POINT value), fired once through the file ``marker``."""

    point: str
    marker: str
    raised: int = 0
    poisoned: str | None = field(default=None)
    """The round a raise_always point picked ("" when another process had the marker)."""

    def fires(self) -> bool:
        """True exactly once across processes sharing the marker."""
        try:
            fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return False
        os.write(fd, self.point.encode())
        os.fsync(fd)
        os.close(fd)
        log.warning("fault point %s fires", self.point)
        return True

    def note(self, line: str) -> None:
        with open(self.marker, "a") as marker:
            marker.write(f"\n{line}")

    def __call__(self, place: str, **context: Any) -> bool | Awaitable[bool]:
        point = self.point
        if place == point and point in KILL_POINTS and self.fires():
            os._exit(CRASH_EXIT_CODE)
        if RAISE_AT.get(point) == place:
            self.raise_a_few_times()
        if RAISE_ALWAYS_AT.get(point) == place:
            for round_id in context.get("rounds", ()):
                self.raise_for_one_round(round_id)
        if place == point and point in DROP_POINTS:
            return self.fires()
        if place == faults.IN_BATCH_STORE == point:
            return self.kill_in_batch_store(context["store"], context["queued"])
        if place == faults.STALL_ROUNDS_PARTITION and point in STALL_POINTS:
            return self.stall(context["app"], context["observed"], context["rounds"])
        return False

    def raise_a_few_times(self) -> None:
        """Raise InjectedFault if this process has not raised it RAISE_TIMES times yet (the first
        raise needs the marker: once across processes); every raise appends a line to the marker."""
        if self.raised >= RAISE_TIMES:
            return
        if self.raised == 0 and not self.fires():
            self.raised = RAISE_TIMES  # another process (or run) had it
            return
        self.raised += 1
        self.note(f"raise {self.raised}/{RAISE_TIMES}")
        raise faults.InjectedFault(f"fault point {self.point}: injected failure {self.raised}/{RAISE_TIMES}")

    def raise_for_one_round(self, round_id: str) -> None:
        """Raise InjectedFault if ``round_id`` is the first round this process met here after the
        marker fired; every raise appends a line to the marker."""
        if self.poisoned is None:
            self.poisoned = round_id if self.fires() else ""  # "": another process (or run) had it
        if not round_id or self.poisoned != round_id:
            return
        self.note(f"raise always {round_id}")
        raise faults.InjectedFault(f"fault point {self.point}: injected failure for round {round_id}")

    async def kill_in_batch_store(self, store: Any, queued: Sequence[Any]) -> bool:
        """A batch spanning two ladders or more: write what a worker killed in the middle of the
        batch's store pipeline leaves (its first half, then the next round's queued marks) and end
        the process as ``kill -9`` does. The batch's ladders are appended to the marker (a line
        ``ladders a,b``)."""
        ladders = sorted({q.ladder for q in queued})
        if len(ladders) < 2 or not self.fires():
            return False
        self.note("ladders " + ",".join(ladders))
        half = len(queued) // 2
        await store.queue_batch(queued[:half])
        await mark_queued(store, queued[half].ladder, queued[half].players, queued[half].seq)
        os._exit(CRASH_EXIT_CODE)

    async def stall(self, app: Any, observed: Mapping[Any, Any], rounds: str) -> bool:
        """The first time this worker has ``rounds`` partitions with a committed offset (it has
        consumed from them: the stall comes after some work, as after a rebalance) the lowest one
        stops being fetched: paused in aiokafka without Faust knowing (what faust-streaming's
        rebalance bug looks like); ``stall_rounds_partition_forever``: its resume made a no-op for
        as long as the assignment lasts. The marker gets a line ``partition N``."""
        candidates = sorted(tp for tp, seen in observed.items() if tp[0] == rounds and seen.committed is not None)
        if not candidates or not self.fires():
            return False
        tp = candidates[0]
        await in_consumer_thread(app, _pause, tp[0], tp[1], self.point == faults.STALL_ROUNDS_PARTITION_FOREVER)
        self.note(f"partition {tp[1]}")
        log.warning("fault point %s: %s[%d] is no longer fetched", self.point, tp[0], tp[1])
        return False


async def _pause(consumer: Any, topic: str, partition: int, forever: bool) -> None:
    """In the consumer thread: pause the partition in aiokafka only (Faust still counts it as
    active); ``forever``: make its resume a no-op while this assignment lasts."""
    from aiokafka import TopicPartition

    tp = TopicPartition(topic, partition)
    consumer.pause(tp)
    if forever:
        consumer._subscription.subscription.assignment.state_value(tp).resume = lambda: None


def install(point: str, marker: str) -> Injector:
    """Install the hook for ``point`` in this process (and return it)."""
    if not marker:
        raise ValueError("FAULT_POINT needs FAULT_MARKER (the file that makes the fault fire once)")
    injector = Injector(point, marker)
    faults.install(injector)
    return injector


def install_from_env(environ: Mapping[str, str] = os.environ) -> None:
    """:func:`install` FAULT_POINT with FAULT_MARKER, if FAULT_POINT is set."""
    if environ.get("FAULT_POINT"):
        install(environ["FAULT_POINT"], environ.get("FAULT_MARKER", ""))


if __name__ == "__main__":
    install_from_env()
    from stream.cli.main import main

    main()
