"""Season routes of the read API: a ladder's season schedule with the league thresholds in effect
(``GET /api/ladders/{ladder}/seasons``), a past season's archived final standings
(``GET /api/ladders/{ladder}/seasons/{season}/leaderboard``, written by ``stream season archive``),
and a player's season: rounds, placement, points with the bonus pool, past seasons
(``GET /api/ladders/{ladder}/players/{player}/seasons``).
"""

from __future__ import annotations

import math
import time
from typing import Any

from aiohttp import web

from stream.api import inputs
from stream.api.errors import bad_request, not_found
from stream.pipeline.season_schedules import SeasonRecord
from stream.engine.season_schedule import Seasons, season_of
from stream.pipeline.seasons import player_season
from stream.store import seasons as store
from stream.store.client import AsyncRedis

DEFAULT_LIMIT = 50
MAX_LIMIT = 1000


def routes(redis_of: Any, ladders_of: Any) -> list[web.RouteDef]:
    """The routes; ``redis_of(request)`` is the app's Redis client, ``ladders_of(request)`` its
    resolved LADDERS with the seasons started since (:class:`~stream.pipeline.season_schedules.SeasonRecord`)."""

    async def get_seasons(request: web.Request) -> web.Response:
        ladder = request.match_info["ladder"]
        config: SeasonRecord = ladders_of(request)
        seasons = config.of(ladder).seasons or Seasons()
        client: AsyncRedis = redis_of(request)
        at = inputs.float_query(request.query["at"], "at", math.nan, low=-math.inf, high=math.inf) \
            if request.query.get("at") else None
        current = seasons.name_of(int(season_of(time.time() if at is None else at, seasons)))
        shares = await store.shares_at(client, ladder, at)
        return web.json_response({"ladder": ladder, "current": current or None, **seasons.to_dict(),
                                  "leagues": shares})

    async def get_season_leaderboard(request: web.Request) -> web.Response:
        ladder, season = request.match_info["ladder"], request.match_info["season"]
        offset = inputs.int_query(request, "offset", 0, low=0, high=10**9)
        limit = inputs.int_query(request, "limit", DEFAULT_LIMIT, low=1, high=MAX_LIMIT)
        total, rows = await store.archive_page(redis_of(request), ladder, season, offset=offset, limit=limit)
        if not total:
            raise not_found(f"no archive of season {season!r} on ladder {ladder!r}", code="no_archive")
        return web.json_response({"ladder": ladder, "season": season, "total": total, "offset": offset,
                                  "limit": limit, "rows": rows})

    async def get_player_seasons(request: web.Request) -> web.Response:
        ladder = request.match_info["ladder"]
        player = request.match_info.get("player") or request.query.get("id", "")  # the ?id= form: "." and ".."
        if not player:
            raise bad_request("give the player's id (?id=)", code="missing_id")
        config: SeasonRecord = ladders_of(request)
        doc = await player_season(redis_of(request), ladder, player, config.of(ladder), config.of(ladder).display,
                                  now=time.time())
        if doc is None:
            raise not_found(f"no player {player!r} on ladder {ladder!r}", code="unknown_player")
        return web.json_response(doc)

    return [web.get("/api/ladders/{ladder}/seasons", get_seasons),
            web.get("/api/ladders/{ladder}/players/{player}/seasons", get_player_seasons),
            web.get("/api/ladders/{ladder}/player/seasons", get_player_seasons),
            web.get("/api/ladders/{ladder}/seasons/{season}/leaderboard", get_season_leaderboard)]
