"""What the worker's probes need to know of its pipeline, shared with the read API's thread.

The event loop ticks a :class:`WorkerStatus` every :data:`TICK_S` (heartbeat, assignment,
rebalance, drain); the API thread reads it for ``/live`` and ``/ready``. Attributes are replaced
whole: a reader sees one tick or the next.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

TICK_S = 1.0
"""Seconds between two ticks of the pipeline's heartbeat timer."""

TP = tuple[str, int]
"""(full topic name, partition)."""


@dataclass
class WorkerStatus:
    """The pipeline as its loop last saw it (see the module docstring)."""

    beat: float = field(default_factory=time.monotonic)
    """time.monotonic() of the loop's last tick."""
    assigned: frozenset[TP] | None = None
    """The consumer's partitions after its last completed rebalance; None before the first one."""
    rebalancing: bool = True
    draining: bool = False
    """SIGTERM received: the worker finishes its batches in hand and exits (``shutdown.py``)."""

    def tick(self, *, rebalancing: bool, assigned: frozenset[TP] | None) -> None:
        """The loop's heartbeat; ``assigned`` is kept only once a rebalance has completed."""
        self.beat = time.monotonic()
        self.rebalancing = rebalancing
        if assigned is not None and not rebalancing:
            self.assigned = assigned

    def blocked_s(self) -> float:
        """Seconds since the loop's last tick."""
        return max(0.0, time.monotonic() - self.beat)
