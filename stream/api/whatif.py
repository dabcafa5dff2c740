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

import math
import time
from typing import Any

import numpy as np
import orjson
from aiohttp import web

from stream import engine
from stream.api.errors import ApiError, bad_request
from stream.contracts.round import Limits, RoundRejected, parse_round
from stream.engine.ladders import LadderConfig
from stream.pipeline import whatif
from stream.settings import Settings
from stream.store.client import AsyncRedis
from stream.store.store import Store

MAX_WHAT_IF_BYTES = 16 * 1024 * 1024
"""Largest what-if body (a 100,000-player scoreboard with long ids fits)."""
ROUND_ID = "what-if"
"""The round id a body without one is read with (nothing is registered under it)."""


async def read_body(request: web.Request, limit: int = MAX_WHAT_IF_BYTES) -> bytes:
    """The request body, at most ``limit`` bytes (413 ``request_too_large`` beyond), read from the
    stream itself: the app's ``client_max_size`` is sized for the other, small bodies."""
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


def read_round(raw: bytes, ladder: str, limits: Limits, now: float) -> tuple[Any, list[str]]:
    """The body's round (ids filled in) and its ``explain_for`` players; 400 with the contract's
    reason as the code (``no_outcome``, ``duplicate_player``, ``bad_weight``, ...) when it is not
    a round the stream would rate."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise bad_request("body must be a JSON object (a RoundResult's standings)", code="not_json") from None
    if not isinstance(data, dict):
        raise bad_request("body must be a JSON object (a RoundResult's standings)", code="not_json")
    explain = data.pop("explain_for", None) or []
    if isinstance(explain, str):
        explain = [explain]
    if not isinstance(explain, list) or not all(isinstance(p, str) for p in explain):
        raise bad_request("explain_for must be a list of player ids", code="bad_explain_for")
    if len(explain) > whatif.MAX_EXPLAINED:
        raise bad_request(f"explain_for names at most {whatif.MAX_EXPLAINED} players", code="bad_explain_for")
    given = data.get("ladder", ladder)
    if given != ladder:
        raise bad_request(f"the body's ladder {given!r} is not the path's {ladder!r}", code="ladder_mismatch")
    data["ladder"] = ladder
    data.setdefault("round_id", ROUND_ID)
    data.setdefault("occurred_at", now)
    try:
        round_ = parse_round(data, limits=limits)
    except RoundRejected as rejected:
        raise bad_request(rejected.message + (f" (field {rejected.field})" if rejected.field else ""),
                          code=rejected.reason) from None
    players = set(round_.players())
    missing = [p for p in explain if p not in players]
    if missing:
        raise bad_request(f"explain_for names {missing[0]!r}, who is not in the standings", code="unknown_player")
    return round_, list(dict.fromkeys(explain))


def _floats(values: np.ndarray) -> list[float | None]:
    return [None if math.isnan(x) else x for x in values.tolist()]


def answer(cfg: LadderConfig, round_: Any, rows: whatif.WhatIfRows, targets: list[whatif.TierTarget],
           interval_z: float) -> dict[str, Any]:
    """The JSON answer: per player the fields of his RatingChange-to-be, plus the interval."""
    perf = [None] * len(rows.players) if rows.performance is None else rows.performance.tolist()
    mu_b, sig_b = rows.mu_before.tolist(), rows.sigma_before.tolist()
    mu_a, sig_a = rows.mu_after.tolist(), rows.sigma_after.tolist()
    shown_b, shown_a = _floats(rows.display_before), rows.display_after.tolist()
    known, played = rows.known.tolist(), rows.rounds_before.tolist()
    ranks = rows.ranks.tolist()
    teams = rows.teams or [None] * len(rows.players)
    shares = rows.shares or [None] * len(rows.players)
    changes = [
        {"player": p, "rank": rank, "team": team, "weight": share, "known": k, "rounds_played": n + 1,
         "performance": pf, "mu_before": mb, "sigma_before": sb, "mu_after": ma, "sigma_after": sa,
         "delta": ma - mb, "display_before": db, "display_rating": da, "display_delta": None if db is None else da - db,
         "tier_before": tb or None, "tier": ta or None, "interval": [ma - interval_z * sa, ma + interval_z * sa]}
        for p, rank, team, share, k, n, pf, mb, sb, ma, sa, db, da, tb, ta in zip(
            rows.players, ranks, teams, shares, known, played, perf, mu_b, sig_b, mu_a, sig_a, shown_b, shown_a,
            rows.tier_before, rows.tier_after)]
    return {
        "ladder": round_.ladder, "round_id": round_.round_id, "occurred_at": round_.occurred_at,
        "weight": round_.weight, "field_size": round_.field_size, "model": cfg.model, "writes": False,
        "display": cfg.display.to_dict(), "interval_z": interval_z, "changes": changes,
        "targets": [t.__dict__ for t in targets],
    }


async def what_if(request: web.Request, store: Store, cfg: LadderConfig, ladder: str, limits: Limits,
                  interval_z: float) -> dict[str, Any]:
    """Read, rate and answer one what-if request (the ladder exists: the caller checked)."""
    started = time.perf_counter()
    raw = await read_body(request)
    round_, explain = read_round(raw, ladder, limits, time.time())
    try:
        whatif.check_round(round_, cfg)
    except RoundRejected as rejected:
        raise bad_request(rejected.message, code=rejected.reason) from None
    stored = await whatif.load(store, ladder, round_.players())
    try:
        rows = whatif.rate(cfg, round_, stored)
        targets = whatif.tier_targets(cfg, round_, stored, explain) if explain else []
    except engine.OutcomeFree as exc:
        raise bad_request(str(exc), code="no_outcome") from None
    out = answer(cfg, round_, rows, targets, interval_z)
    out["server_ms"] = (time.perf_counter() - started) * 1000.0
    return out


_STORE: web.AppKey[list[Store]] = web.AppKey("what_if_store")


def setup(app: web.Application) -> None:
    """Make room for the app's :class:`Store` (made on first use by :func:`store_of`)."""
    app[_STORE] = []


def store_of(app: web.Application, client: AsyncRedis, settings: Settings) -> Store:
    """The app's :class:`Store` over its Redis client ``client``."""
    held = app[_STORE]
    if not held:
        held.append(Store(client, history_length=settings.history_length, cluster=settings.redis_cluster))
    return held[0]


def limits_of(settings: Settings) -> Limits:
    """The worker's input limits: a what-if round is read as the stream reads a round."""
    return Limits.from_settings(settings)


__all__ = ["what_if", "read_round", "answer", "MAX_WHAT_IF_BYTES"]
