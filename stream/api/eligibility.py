"""``/leaderboard?eligible=true``: the leaderboard of the players its rules admit (the display
entry's ``min_rounds``, ``active_days``, ``max_sigma``; :mod:`stream.pipeline.status`), checked at
read time. The ladder's sorted set is walked from the top in chunks until the page is filled;
at most :data:`MAX_ELIGIBLE_SCAN` entries are read (the answer then says ``truncated``). Each row's
``position`` is its place among the eligible players, ``leaderboard_position`` its place on the
whole leaderboard; ineligible players stay queryable (the plain leaderboard, the player page)."""

from __future__ import annotations

import time
from typing import Any

from stream.engine.ladders import LadderConfig
from stream.pipeline.status import status_fields
from stream.store import queries
from stream.store.client import AsyncRedis

CHUNK = 500
MAX_ELIGIBLE_SCAN = 20_000


async def eligible_page(r: AsyncRedis, cfg: LadderConfig, ladder: str, *, offset: int, limit: int) -> dict[str, Any]:
    """The page ``offset..offset+limit`` of the eligible players, best first (module docstring)."""
    kept: list[dict[str, Any]] = []
    found = 0
    read = 0
    total_on_board = 0
    truncated = False
    now = time.time()
    while True:
        page = await queries.leaderboard(r, ladder, offset=read, limit=CHUNK)
        total_on_board = page.total
        rows = [row.to_dict() for row in page.rows]
        for row, extra in zip(rows, status_fields(cfg, [x["mu"] for x in rows], [x["sigma"] for x in rows],
                                                  [x["rounds"] for x in rows], [x["last_time"] for x in rows], now)):
            row.update(extra)
            if not row["eligible"]:
                continue
            found += 1
            if offset < found <= offset + limit:
                row["leaderboard_position"] = row["position"]
                row["position"] = found
                kept.append(row)
        read += len(rows)
        if len(rows) < CHUNK or read >= total_on_board:
            break
        if read >= MAX_ELIGIBLE_SCAN:
            truncated = True
            break
    return {"ladder": ladder, "total": found, "offset": offset, "limit": limit, "rows": kept, "search": None,
            "truncated": truncated, "eligible": True, "leaderboard_size": total_on_board}
