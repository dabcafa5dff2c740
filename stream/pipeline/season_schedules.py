"""The seasons started on a running service: ``stream season start`` adds a season to the ladder's
schedule of record in Redis (``stream.store.seasons.schedule_season``); every process that rates
(the workers' phase one and two, corrections, backfill) and the read side merge it with the
``LADDERS`` entry's schedule by one function (``stream.engine.ladders.with_schedules``).

Why replay still equals the stream: a season is only added when no round at or after its start
is registered to rate on the ladder (``schedule_season.lua`` checks the ladder's ``occurred_max``
atomically), so no rating already done could have seen another schedule; and a start is at least
SEASON_NOTICE_S ahead (at least twice SEASON_REFRESH_S), so every worker, which reads the schedule
every SEASON_REFRESH_S (a Faust timer: ``refresh``), has it before a round stamped at or after the
start arrives. What the rule leaves open: a round whose ``occurred_at`` runs ahead of the clock
of the worker that rates it by more than the notice less the refresh period, registered between
the start's scheduling and that worker's next refresh (README "Seasons").
"""

from __future__ import annotations

import logging
import time

from stream.engine.ladders import with_schedules
from stream.pipeline.context import PipelineContext
from stream.store import seasons as store

log = logging.getLogger(__name__)


async def refresh(ctx: PipelineContext, *, force: bool = False) -> bool:
    """Read the seasons of record if SEASON_REFRESH_S has passed since the last read (``force``:
    now) and, if they changed, rebuild ``ctx.ladders`` from the configured ladders and them.
    Returns whether the ladders changed. A schedule that does not merge (a season in Redis that
    contradicts ``LADDERS``) is logged and the ladders are kept."""
    now = time.monotonic()
    if not force and now - ctx.started_read_at < ctx.settings.season_refresh_s:
        return False
    started = await store.scheduled_seasons(ctx.store.client)
    ctx.started_read_at = now
    if started == ctx.started:
        return False
    assert ctx.configured is not None
    try:
        ladders = with_schedules(ctx.configured, started)
    except ValueError as exc:
        log.error("seasons of record not applied (kept the previous schedule): %s", exc)
        return False
    ctx.ladders, ctx.started = ladders, started
    log.info("seasons of record read: %s", {ladder: [e["name"] for e in entries] for ladder, entries in started.items()})
    return True
