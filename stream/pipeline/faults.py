"""The fault seam: the named places in the handlers where a test injects a failure, and the one
hook that does it.

A handler calls ``await faults.at(POINT, **context)``; with no hook installed (production) it
returns False at once. The fault suite's hook (:func:`install`, tests/faults/injection.py) may
kill the process, raise :class:`InjectedFault`, cut the batch's store, stall a partition, or
return True: the caller then loses what the place names (the ``drop_*`` places). The places'
names are the tests' FAULT_POINT values (grouped by kind in tests/faults/injection.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from inspect import isawaitable
from typing import Any

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
"""Half of a correction's writes sent (rounds, no player yet), no event: its redelivery must finish
it (tests/faults/test_corrections_kill.py; not among the points a stream of rounds meets)."""
IN_BATCH_STORE = "in_batch_store"
"""Phase one of a batch dies with its store (a pipeline, not a transaction) half written."""

#: Crash points of a matchmaking tick (stream/pipeline/matchmaking.py), in the order a tick meets them.
MM_AFTER_JOIN_BEFORE_ACK = "mm_after_join_before_ack"
"""Joins and cancels applied in Redis, their events not sent, the tickets' input not acked."""
MM_AFTER_FORM_BEFORE_COMMIT = "mm_after_form_before_commit"
"""A tick read the pool and formed its matches; nothing of them is recorded."""
MM_AFTER_COMMIT_BEFORE_SEND = "mm_after_commit_before_send"
"""A tick's matches are committed (tickets out of the pool, players in match, records in the outbox), nothing sent."""
MM_AFTER_SEND_BEFORE_MARK = "mm_after_send_before_mark"
"""A tick's records are acknowledged by the broker, the outbox not cleared: they are sent again."""

#: Loss points: the worker goes on, but one thing is lost (what a framework bug could do).
DROP_ONE_FANOUT_MESSAGE = "drop_one_fanout_message"
"""The first fan-out message phase one sends is silently not sent (the round stays pending)."""
DROP_ROUND_AFTER_REGISTER = "drop_round_after_register"
"""The first round registered is abandoned and its input acked (the round stays registered)."""

#: Raise points: the handler raises InjectedFault a few times in a row, then works again.
RAISE_IN_PHASE_ONE = "raise_in_phase_one"
"""Phase one raises where AFTER_PRIORS_BEFORE_FANOUT_STORED is (the round registered, its
priors read and performances computed, nothing of its fan-out stored)."""
RAISE_IN_PHASE_TWO = "raise_in_phase_two"
"""Phase two's handler raises after it stored a batch's effects, before its events are sent."""

#: Poison points: the handler raises InjectedFault EVERY time it meets the first round that got there
#: (what a message the code cannot digest does): the worker must dead-letter it and move on.
RAISE_ALWAYS_IN_PHASE_ONE = "raise_always_in_phase_one"
"""Phase one raises for one round where RAISE_IN_PHASE_ONE does, every attempt."""
RAISE_ALWAYS_IN_PHASE_TWO = "raise_always_in_phase_two"
"""Phase two raises for every batch holding an update of one round, every attempt."""

#: Stall points (stream/pipeline/runtime/watchdog.py): the worker's consumer stops fetching one partition.
STALL_ROUNDS_PARTITION = "stall_rounds_partition"
"""A ``rounds`` partition paused in aiokafka without Faust knowing (faust-streaming's rebalance
bug): the watchdog's self-heal (seek + resume) clears it."""
STALL_ROUNDS_PARTITION_FOREVER = "stall_rounds_partition_forever"
"""As STALL_ROUNDS_PARTITION, and resuming it does nothing while the assignment lasts: only the
watchdog's exit (STALL_EXIT) and a restart clear it."""


class InjectedFault(RuntimeError):
    """The exception of a raise point (an unexpected error, not a transient one)."""


Hook = Callable[..., "bool | None | Awaitable[bool | None]"]
"""``hook(point, **context)``: what happens at ``point`` (True: the caller drops what the point names)."""

_hook: Hook | None = None


def install(hook: Hook | None) -> None:
    """Install the fault hook of this process (None: none, as in production)."""
    global _hook
    _hook = hook


async def at(point: str, **context: Any) -> bool:
    """Pass the place ``point``: the installed hook's verdict (True: drop what the place names),
    False without a hook."""
    if _hook is None:
        return False
    verdict = _hook(point, **context)
    if isawaitable(verdict):
        verdict = await verdict
    return bool(verdict)
