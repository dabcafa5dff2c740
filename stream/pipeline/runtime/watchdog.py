"""The stalled-partition watchdog: find an input partition this worker no longer fetches, heal it or exit.

After some rebalances faust-streaming never fetches an assigned partition again (faust-streaming/faust #596,
#629, #175, #523). A ``rounds`` or ``player-updates`` partition that lags with nothing moving nor in hand for
STALL_TIMEOUT_S (:func:`assess`) is alerted and healed (seek to the committed offset and resume); still stalled
STALL_TIMEOUT_S after that, the worker exits with :data:`STALL_EXIT_CODE` (STALL_EXIT) to be restarted.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import faust
from faust.types import TP as FaustTP

from stream.pipeline import faults, metrics
from stream.pipeline.runtime.compat import (committed_offsets, fetch_positions, in_consumer_thread, seek_partitions,
                                            set_read_offset)
from stream.pipeline.topics import PLAYER_UPDATES, ROUNDS
from stream.settings import Settings

log = logging.getLogger(__name__)

STALL_EXIT_CODE = 70
"""Exit status of a worker whose watchdog gave up on a stalled partition (sysexits' EX_SOFTWARE)."""

WATCHED_TOPICS = (ROUNDS, PLAYER_UPDATES)
"""Topics whose partitions the watchdog watches (names before TOPIC_PREFIX)."""

LOG_EVERY_S = 30.0
"""While the set of stalled partitions stays the same, its ERROR is repeated at most this often."""

OBSERVE_TIMEOUT_S = 10.0
"""Longest wait for one observation (the ListOffsets request); a failed one resets the tracking."""

TP = tuple[str, int]
"""(topic, partition)."""


@dataclass(frozen=True)
class Observation:
    """One partition as seen by one check: the broker's end offset, the next offset to commit from (Faust's
    record), the fetch position (each None if unknown), and whether Faust holds unacknowledged messages of it."""

    end: int | None
    committed: int | None
    position: int | None
    in_flight: bool = False

    @property
    def done(self) -> int | None:
        """The first offset not known to be processed: committed, else the position."""
        return self.committed if self.committed is not None else self.position

    @property
    def busy(self) -> bool:
        """Messages of the partition are in the worker's hands (fetched, not acknowledged)."""
        done = self.done
        return self.in_flight or (self.position is not None and done is not None and self.position > done)

    @property
    def lagging(self) -> bool:
        """The broker has records beyond what this worker processed (as far as the end offset shows)."""
        return self.end is not None and self.end > (self.done or 0)


@dataclass(frozen=True)
class Track:
    """A partition's progress (committed, position) and since when it has been suspicious without moving."""

    progress: tuple[int | None, int | None]
    since: float


def assess(tracks: Mapping[TP, Track], observed: Mapping[TP, Observation], now: float,
           timeout_s: float) -> tuple[dict[TP, Track], set[TP]]:
    """(new history, stalled partitions) from the previous ``tracks`` and ``observed`` now (pure): a partition
    that lags with nothing in hand is suspicious, its track restarting whenever it moves; stalled once
    suspicious and unmoved for ``timeout_s``."""
    new: dict[TP, Track] = {}
    stalled: set[TP] = set()
    for tp, seen in observed.items():
        if not seen.lagging or seen.busy:
            continue
        progress = (seen.committed, seen.position)
        old = tracks.get(tp)
        track = old if old is not None and old.progress == progress else Track(progress, now)
        new[tp] = track
        if now - track.since >= timeout_s:
            stalled.add(tp)
    return new, stalled


@dataclass(frozen=True)
class Decision:
    """What to do about the stalled partitions: heal these, exit or not, and the heal times to keep."""

    heal: frozenset[TP]
    exit: bool
    healed_at: dict[TP, float]
    hopeless: frozenset[TP] = frozenset()


def decide(stalled: Collection[TP], healed_at: Mapping[TP, float], now: float, timeout_s: float,
           exit_enabled: bool) -> Decision:
    """Heal a stalled partition; still stalled ``timeout_s`` after its heal it is hopeless: exit if
    ``exit_enabled``, else heal it again. Partitions no longer stalled forget their heal (pure)."""
    kept = {tp: at for tp, at in healed_at.items() if tp in stalled}
    heal: set[TP] = set()
    hopeless: set[TP] = set()
    for tp in stalled:
        at = kept.get(tp)
        if at is None:
            heal.add(tp)
        elif now - at >= timeout_s:
            hopeless.add(tp)
            if not exit_enabled:
                heal.add(tp)
    for tp in heal:
        kept[tp] = now
    return Decision(frozenset(heal), bool(hopeless) and exit_enabled, kept, frozenset(hopeless))


def describe(tps: Iterable[TP], observed: Mapping[TP, Observation]) -> str:
    """``topic[partition] (committed c, position p, end e)`` of each partition, sorted."""
    parts = []
    for tp in sorted(tps):
        seen = observed.get(tp)
        detail = f" (committed {seen.committed}, position {seen.position}, end {seen.end})" if seen else ""
        parts.append(f"{tp[0]}[{tp[1]}]{detail}")
    return ", ".join(parts)


# --- the consumer side (aiokafka in Faust's consumer thread) --------------------------------------


async def _snapshot(consumer: Any, topics: frozenset[str]) -> dict[TP, tuple[int | None, int | None]]:
    """In the consumer thread: (end offset, position) of every assigned partition of ``topics``."""
    assigned = [tp for tp in consumer.assignment() if tp.topic in topics]
    if not assigned:
        return {}
    async with asyncio.timeout(OBSERVE_TIMEOUT_S):  # not wait_for: on 3.11 it can drop a cancel (store/cancel.py)
        ends = await consumer.end_offsets(assigned)
    positions = fetch_positions(consumer, assigned)
    return {(tp.topic, tp.partition): (ends.get(tp), positions[tp]) for tp in assigned}


async def observe(app: faust.App, topics: frozenset[str]) -> dict[TP, Observation]:
    """Every assigned partition of ``topics`` (aiokafka's view from its thread, Faust's from this loop)."""
    snapshot = await in_consumer_thread(app, _snapshot, topics)
    in_flight = {(m.tp.topic, m.tp.partition) for m in list(cast(Any, app.consumer).unacked)}
    committed = committed_offsets(app)
    return {tp: Observation(end, committed.get(FaustTP(*tp)), position, tp in in_flight)
            for tp, (end, position) in snapshot.items()}


async def heal(app: faust.App, tps: Collection[TP], observed: Mapping[TP, Observation]) -> None:
    """Seek each partition to its committed offset (else its position) and resume it, in aiokafka and Faust."""
    offsets = {tp: observed[tp].done for tp in tps}
    await in_consumer_thread(app, seek_partitions, offsets, True)
    consumer = cast(Any, app.consumer)
    assigned = consumer.assignment()  # a partition revoked meanwhile must not join Faust's active set
    faust_tps = [FaustTP(*tp) for tp in tps if FaustTP(*tp) in assigned]
    for tp in faust_tps:
        offset = offsets[(tp.topic, tp.partition)]
        if offset is not None:
            set_read_offset(app, tp, offset or None)
    consumer.resume_partitions(faust_tps)


# --- the timer --------------------------------------------------------------------------------------


@dataclass
class Watchdog:
    """One worker's watchdog state between two checks (see the module docstring)."""

    settings: Settings
    tracks: dict[TP, Track] = field(default_factory=dict)
    healed_at: dict[TP, float] = field(default_factory=dict)
    alerted: frozenset[TP] = frozenset()
    alerted_at: float = float("-inf")
    warned_at: float = float("-inf")

    @property
    def topics(self) -> frozenset[str]:
        return frozenset(self.settings.topic(name) for name in WATCHED_TOPICS)

    def reset(self) -> None:
        """Forget the history (no observation: a rebalance, or the broker did not answer)."""
        self.tracks.clear()
        self.healed_at.clear()
        self.alerted = frozenset()
        for topic in self.topics:
            metrics.STALLED_PARTITIONS.labels(topic).set(0)

    def report(self, stalled: set[TP], observed: Mapping[TP, Observation], now: float) -> None:
        """Set the gauge per topic; ERROR when the stalled set changes, else every LOG_EVERY_S."""
        for topic in self.topics:
            metrics.STALLED_PARTITIONS.labels(topic).set(sum(1 for tp in stalled if tp[0] == topic))
        frozen = frozenset(stalled)
        if frozen and (frozen != self.alerted or now - self.alerted_at >= LOG_EVERY_S):
            then = (f"exiting with status {STALL_EXIT_CODE} if still stalled {self.settings.stall_timeout_s:.0f}s "
                    "after the heal" if self.settings.stall_exit else "healing again while stalled (STALL_EXIT=false)")
            log.error("stalled input partition(s): %s: the end offset stayed ahead of the committed offset for "
                      "%.0fs with nothing fetched (faust-streaming stops fetching a partition after some "
                      "rebalances); healing (seek to the committed offset + resume), %s",
                      describe(frozen, observed), self.settings.stall_timeout_s, then)
            self.alerted_at = now
        elif self.alerted and not frozen:
            log.warning("stalled partition(s) moving again: %s", describe(self.alerted, observed))
        self.alerted = frozen

    async def check(self, app: faust.App) -> Decision | None:
        """One watchdog round: observe, assess, alert, heal or exit. None when nothing was observed."""
        if getattr(app, "rebalancing", False) or not cast(Any, app.consumer).flow_active:
            self.reset()
            return None
        try:
            observed = await observe(app, self.topics)
        except Exception as exc:  # the broker did not answer, the consumer is not started or restarting
            if time.monotonic() - self.warned_at >= LOG_EVERY_S:  # rate-limited: e.g. the broker is down
                log.warning("watchdog: no observation (%s: %s)", type(exc).__name__, exc)
                self.warned_at = time.monotonic()
            self.reset()
            return None
        await faults.at(faults.STALL_ROUNDS_PARTITION, app=app, observed=observed,
                        rounds=self.settings.topic(ROUNDS))
        now = time.monotonic()
        self.tracks, stalled = assess(self.tracks, observed, now, self.settings.stall_timeout_s)
        self.report(stalled, observed, now)
        decision = decide(stalled, self.healed_at, now, self.settings.stall_timeout_s, self.settings.stall_exit)
        self.healed_at = decision.healed_at
        if decision.exit:  # no cleanup: nothing uncommitted is acknowledged
            log.critical("partition(s) %s still stalled %.0fs after the self-heal: exiting with status %d so the "
                         "supervisor restarts this worker (uncommitted input is redelivered)",
                         describe(decision.hopeless, observed), self.settings.stall_timeout_s, STALL_EXIT_CODE)
            for handler in logging.getLogger().handlers + log.handlers:
                handler.flush()
            os._exit(STALL_EXIT_CODE)
        if decision.heal:
            log.error("healing stalled partition(s) %s: seek to the committed offset and resume",
                      describe(decision.heal, observed))
            await heal(app, decision.heal, observed)
            for tp in decision.heal:
                metrics.STALL_HEALS.labels(tp[0]).inc()
        return decision


def register(app: faust.App, settings: Settings) -> Watchdog:
    """Run the watchdog on ``app`` every WATCHDOG_INTERVAL_S (a Faust timer; never raises)."""
    watchdog = Watchdog(settings)

    @app.timer(interval=settings.watchdog_interval_s, name="stall-watchdog")  # type: ignore[untyped-decorator]
    async def stall_watchdog() -> None:
        try:
            await watchdog.check(app)
        except Exception:  # a watchdog bug must not stop the worker (nor the timer)
            log.exception("watchdog check failed")

    return watchdog
