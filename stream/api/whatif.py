"""``POST /api/ladders/{ladder}/what-if``: a round's rating changes before it is published.

The body is shaped like a ``RoundResult`` (``standings``, optional ``occurred_at`` and
``weight``; ``round_id`` and ``ladder`` optional), plus ``explain_for``: up to
:data:`~stream.pipeline.whatif.MAX_EXPLAINED` players of the round whose tier targets to answer.
The round is read by the input contract (``parse_round``, the worker's limits) and rated by
:mod:`stream.pipeline.whatif` from the live Redis state, exactly as the stream would rate it;
nothing is written. Its body may be larger than the API's other bodies
(:data:`MAX_WHAT_IF_BYTES`): a contest's scoreboard.
"""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from stream.api.errors import ApiError, bad_request
from stream.contracts.round import Limits
from stream.engine.ladders import LadderConfig
from stream.pipeline import whatif
from stream.store.client import AsyncRedis

MAX_WHAT_IF_BYTES = 16 * 1024 * 1024
"""Largest what-if body (a 100,000-player scoreboard with long ids fits)."""


async def read_body(request: web.Request, limit: int | None = None) -> bytes:
    """The request body, at most ``limit`` bytes (413 ``request_too_large`` beyond), read from the
    stream itself: the app's ``client_max_size`` is sized for the other, small bodies."""
    limit = MAX_WHAT_IF_BYTES if limit is None else limit
    length = request.content_length
    if length is not None and length > limit:
        raise ApiError(413, "request_too_large", f"a what-if body is at most {limit} bytes")
    data = bytearray()
    while True:
        chunk = await request.content.read(65536)
        if not chunk:
            return bytes(data)
        data += chunk
        if len(data) > limit:
            raise ApiError(413, "request_too_large", f"a what-if body is at most {limit} bytes")


async def what_if(request: web.Request, r: AsyncRedis, cfg: LadderConfig, ladder: str,
                  limits: Limits) -> dict[str, Any]:
    """Read, rate and answer one what-if request (the ladder exists: the caller checked); a body
    that is not a round the stream would rate is a 400 with the contract's reason as its code."""
    started = time.perf_counter()
    raw = await read_body(request)
    try:
        out = await whatif.ask(r, cfg, ladder, raw, limits, time.time())
    except whatif.WhatIfRefused as refused:
        raise bad_request(refused.message, code=refused.code) from None
    out["server_ms"] = (time.perf_counter() - started) * 1000.0
    return out


__all__ = ["what_if", "MAX_WHAT_IF_BYTES"]
