"""SIGTERM: finish the batches in hand, commit, exit (within SHUTDOWN_TIMEOUT_S).

Faust's own SIGTERM handling cancels the agents where they are: a batch half handled is
abandoned (its records come again after the restart; the handlers' idempotency makes that
harmless, but the work is done twice and the restart starts behind). Here SIGTERM first
*drains* (``compat.graceful_worker`` calls :meth:`Drain.run`, then Faust's stop):

1. ``/ready`` turns 503 (``WorkerStatus.draining``);
2. phase one takes no new batch (its :class:`Gate` closes: ``compat.take_batches`` parks the
   agent before its next batch) and the batches in hand finish, their fan-out acknowledged and
   their events acked (phase two keeps running meanwhile: a phase-one batch may wait at the
   per-player barrier for updates phase two applies);
3. then phase two and corrections do the same;
4. the consumer commits the acked offsets; Faust then stops as usual.

Whatever is still in hand when SHUTDOWN_TIMEOUT_S has passed is abandoned as before (logged).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from stream.pipeline.worker_status import WorkerStatus

log = logging.getLogger(__name__)

PHASE_ONE, PHASE_TWO, CORRECTIONS = "phase-one", "phase-two", "corrections"
STAGES: tuple[tuple[str, ...], ...] = ((PHASE_ONE,), (PHASE_TWO, CORRECTIONS))
"""The gates closed in turn: phase one first (its batches may wait on phase two), then the rest."""


class Gate:
    """One agent's intake: how many of its batches are in hand, and whether it may take more."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = False
        self.in_hand = 0
        self._idle: asyncio.Event | None = None

    def _event(self) -> asyncio.Event:
        if self._idle is None:
            self._idle = asyncio.Event()
            if self.in_hand == 0:
                self._idle.set()
        return self._idle

    def taken(self) -> None:
        """A batch is handed to the agent."""
        self.in_hand += 1
        self._event().clear()

    def done(self) -> None:
        """A batch was acked (or abandoned: the agent raised or was cancelled)."""
        self.in_hand = max(0, self.in_hand - 1)
        if self.in_hand == 0:
            self._event().set()

    async def park(self) -> None:
        """Called before each batch: once closed, wait until the agent is cancelled (Faust's stop)."""
        if self.closed:
            await asyncio.get_running_loop().create_future()  # never resolved

    async def close(self, timeout_s: float) -> bool:
        """Take no more batches; wait up to ``timeout_s`` for those in hand. True if none is left."""
        self.closed = True
        try:
            async with asyncio.timeout(max(0.0, timeout_s)):
                await self._event().wait()
        except TimeoutError:
            return False
        return True


class Drain:
    """The worker's gates and the drain that closes them (see the module docstring)."""

    def __init__(self, status: WorkerStatus | None = None) -> None:
        self.status = status
        self.gates: dict[str, Gate] = {}

    def gate(self, name: str) -> Gate:
        return self.gates.setdefault(name, Gate(name))

    async def run(self, timeout_s: float, commit: Callable[[], Awaitable[object]],
                  stages: Sequence[Sequence[str]] = STAGES) -> bool:
        """Close the gates stage by stage, then ``commit``; all within ``timeout_s``. True when every
        batch in hand finished and the commit went through."""
        started = time.monotonic()
        if self.status is not None:
            self.status.draining = True
        log.warning("SIGTERM: finishing the batches in hand (at most %.0fs), then committing and exiting", timeout_s)
        clean = True
        for stage in stages:
            for name in stage:
                gate = self.gate(name)
                if not await gate.close(timeout_s - (time.monotonic() - started)):
                    log.warning("SIGTERM: %d batch(es) of %s still in hand after %.0fs: left to be redelivered",
                                gate.in_hand, name, timeout_s)
                    clean = False
        try:
            async with asyncio.timeout(max(1.0, timeout_s - (time.monotonic() - started))):
                await commit()
        except Exception as exc:  # noqa: BLE001 - a failed commit only means redelivery after the restart
            log.warning("SIGTERM: the final commit failed (%s: %s): the last batches may be redelivered",
                        type(exc).__name__, exc)
            clean = False
        log.warning("SIGTERM: drained in %.2fs (%s); stopping", time.monotonic() - started,
                    "every batch in hand finished and committed" if clean else "not clean, see above")
        return clean
