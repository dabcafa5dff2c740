"""The seasons started on a running service: ``stream season start`` adds a season to the ladder's
schedule of record in Redis (``stream.store.seasons.schedule_season``); every process that rates
(the workers' phase one and two, corrections, the sweeper, backfill) and the read API merge it with
the ``LADDERS`` entry's schedule by one function (``stream.engine.ladders.with_schedules``), read
through a :class:`SeasonRecord`.

Why replay still equals the stream: a season is only added when no round at or after its start
is registered to rate on the ladder (``schedule_season.lua`` checks the ladder's ``occurred_max``
atomically), so no rating already done could have seen another schedule; and no round is
registered by a worker holding an older schedule than Redis's if the round is at or after a start
that worker has not read: ``schedule_season.lua`` records each start with a schedule version on
the ladder hash, the worker registers with the version it holds (:attr:`SeasonRecord.versions`)
and ``register_round.lua`` answers ``stale_schedule``; phase one then reads the schedule at once
(``refresh_seasons(force=True)``) and registers again. SEASON_NOTICE_S (a start at least that far
ahead) is a sanity rule only: it makes such a refusal rare.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from stream.engine.ladders import LadderConfig, Ladders, with_schedules
from stream.store import seasons as store
from stream.store.client import AsyncRedis

log = logging.getLogger(__name__)


@dataclass
class SeasonRecord:
    """The configured ladders (``LADDERS``) and, in :attr:`current`, the same with the seasons of
    record last read from Redis; read again at most every ``refresh_s`` seconds."""

    configured: Ladders
    refresh_s: float
    current: Ladders = field(init=False)
    started: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """The seasons of record last read, ladder -> entries."""
    versions: dict[str, int] = field(default_factory=dict)
    """The schedule version of each ladder in :attr:`started` (register_round.lua's check)."""
    read_at: float = -float("inf")
    """When :attr:`started` was read (``time.monotonic``)."""

    def __post_init__(self) -> None:
        self.current = self.configured

    def version(self, ladder: str) -> int:
        """The ladder's schedule version in the seasons of record applied (0: none read)."""
        return self.versions.get(ladder, 0)

    def of(self, ladder: str) -> LadderConfig:
        """The ladder's configuration, with the seasons of record last read."""
        return self.current.of(ladder)

    async def read(self, client: AsyncRedis, *, force: bool = False) -> Ladders | None:
        """Read the seasons of record if ``refresh_s`` has passed since the last read (``force``:
        now); the new ladders if they changed, else None. A schedule that does not merge (a season
        in Redis that contradicts ``LADDERS``) is logged and the ladders are kept."""
        now = time.monotonic()
        if not force and now - self.read_at < self.refresh_s:
            return None
        started, versions = await store.schedule_of_record(client)
        self.read_at = now
        if started == self.started:
            self.versions = versions
            return None
        try:
            ladders = with_schedules(self.configured, started)
        except ValueError as exc:
            log.error("seasons of record not applied (kept the previous schedule): %s", exc)
            return None
        self.current, self.started, self.versions = ladders, started, versions
        log.info("seasons of record read: %s", {ladder: [e["name"] for e in entries] for ladder, entries in started.items()})
        return ladders
