"""The worker's copies of the pools of the queues it ticks (``matchmaking.PoolMirror``), kept
current by the changes it writes itself.

Every script call that changes a pool bumps the pool's version in Redis and returns the version
before and after it (``store.matchmaking``). The tickets agent and the tick hand what their call
did (:meth:`PoolCopies.applied`); it is applied to the copy when the copy is at the call's
version before, else kept until the copy gets there (two calls' replies may be handled out of
order). A tick takes the copy only when its version equals the one it just read from Redis
(:meth:`PoolCopies.current`; it first waits for this worker's calls in flight, whose replies may
not be handled yet); any other writer (another worker during a rebalance, a tool) makes the
versions differ and the tick re-reads the pool in full. A worker that stops owning a queue drops
its copy (:meth:`PoolCopies.drop`), so taking a queue over, like a restart, starts with a full read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from stream.matchmaking.mirror import Join, PoolMirror

PENDING_MAX = 256
"""Changes kept per queue while the copy is not at their version (beyond, the oldest go: the copy
then falls behind and the next tick re-reads the pool in full)."""
IN_FLIGHT_WAIT_S = 1.0
"""How long a tick that found the versions differ waits for this worker's calls in flight."""


@dataclass
class _Queue:
    """One queue's copy, the changes not applied yet (by version before), the calls in flight."""

    copy: PoolMirror | None = None
    pending: dict[int, tuple[int, list[Join], list[str]]] = field(default_factory=dict)
    in_flight: int = 0
    confirmed: int = 0
    """The pool's version a tick last found the copy current at (or loaded it at)."""
    idle: asyncio.Event = field(default_factory=asyncio.Event)


class PoolCopies:
    """The copies of one worker, per queue (module docstring)."""

    def __init__(self) -> None:
        self.queues: dict[str, _Queue] = {}

    def _of(self, queue: str) -> _Queue:
        q = self.queues.get(queue)
        if q is None:
            q = self.queues[queue] = _Queue()
            q.idle.set()
        return q

    def begin(self, queue: str) -> None:
        """A call that may change ``queue``'s pool is about to be sent."""
        q = self._of(queue)
        q.in_flight += 1
        q.idle.clear()

    def applied(self, queue: str, before: int, after: int, joins: Sequence[Join] = (),
                removed: Sequence[str] = ()) -> None:
        """A call sent after :meth:`begin` took ``queue``'s pool from version ``before`` to ``after``
        (equal: no change) by these joins and removals; or failed (then call :meth:`failed`)."""
        q = self._of(queue)
        if after != before:
            q.pending[before] = (after, list(joins), list(removed))
            while len(q.pending) > PENDING_MAX:
                del q.pending[min(q.pending)]
        self._advance(q)
        self.failed(queue)

    def failed(self, queue: str) -> None:
        """The call begun is over (its reply handled or lost)."""
        q = self._of(queue)
        q.in_flight = max(0, q.in_flight - 1)
        if not q.in_flight:
            q.idle.set()

    @staticmethod
    def _advance(q: _Queue) -> None:
        """Apply the pending changes that follow the copy's version, drop those before it."""
        if q.copy is None:
            return
        while q.copy.version in q.pending:
            after, joins, removed = q.pending.pop(q.copy.version)
            q.copy.delta(joins, removed, after)
        for before in [b for b in q.pending if b < q.copy.version]:
            del q.pending[before]

    async def current(self, queue: str, version: int) -> PoolMirror | None:
        """The copy of ``queue`` if it is at ``version`` (the pool's, just read), after this
        worker's calls in flight are handled (at most IN_FLIGHT_WAIT_S); None: re-read in full."""
        q = self._of(queue)
        if q.copy is None:
            return None
        self._advance(q)
        if q.copy.version != version and q.in_flight:
            try:
                await asyncio.wait_for(q.idle.wait(), IN_FLIGHT_WAIT_S)
            except asyncio.TimeoutError:
                return None
            self._advance(q)
        # A copy ahead of the version read is as good when the version moved forward from the one
        # last confirmed (the calls since were this worker's own, handled after the read); a version
        # behind the confirmed one means the pool was lost or rewritten (e.g. Redis restarted empty).
        if q.copy.version == version or q.confirmed <= version < q.copy.version:
            q.confirmed = version
            return q.copy
        return None

    def load(self, queue: str, copy: PoolMirror) -> PoolMirror:
        """The pool read in full: the copy from now on (with the changes already handed after it)."""
        q = self._of(queue)
        q.copy, q.confirmed = copy, copy.version
        self._advance(q)
        return copy

    def drop(self, queue: str) -> None:
        """This worker stopped ticking ``queue``: forget its copy (the next tick reads in full)."""
        q = self._of(queue)
        q.copy = None
        q.pending.clear()
