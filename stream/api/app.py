"""The read API and dashboard: ``create_app(redis_client, settings) -> aiohttp.web.Application``: JSON
endpoints over :mod:`stream.store.queries` (``openapi.json``), Server-Sent Events, metrics, the dashboard.
Ids in paths are percent-encoded segments (:func:`stream.api.inputs.path_param`), or ``?id=`` for ``.``/``..``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable
from importlib import resources
from pathlib import Path
from typing import Any, cast

import numpy as np
import orjson
from aiohttp import web
from aiohttp.client_exceptions import ClientConnectionResetError
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from redis.exceptions import RedisError

from stream.api import eligibility, health_export, inputs, probes, queues, seasons, whatif as whatif_api
from stream.api.cache import ResponseCache
from stream.api.errors import ApiError, bad_request, json_errors, not_found
from stream.api.health import KafkaProbe
from stream.contracts.round import Limits
from stream.engine.display import DisplayConfig, display_rating, league_division
from stream.engine.ladders import LadderConfig, parse_ladders
from stream.engine.params import Params
from stream.engine.predict import PerformanceModel, outcome_model, predict_lobby, predict_teams
from stream.engine.seasons import next_round_view
from stream.pipeline import deadletters, explain, metrics as metrics_, status as rating_status
from stream.pipeline.context import load_queues
from stream.pipeline.season_schedules import SeasonRecord
from stream.pipeline.worker_status import WorkerStatus
from stream.pipeline.topics import ROUNDS_DLQ
from stream.settings import Settings
from stream.store import health as store_health
from stream.store import queries
from stream.store.client import AsyncRedis

log = logging.getLogger(__name__)
STATIC_DIR = Path(str(resources.files("stream.api"))) / "static"
OPENAPI_PATH = Path(str(resources.files("stream.api"))) / "openapi.json"

REDIS_KEY: web.AppKey[AsyncRedis] = web.AppKey("redis")
SETTINGS_KEY = web.AppKey("settings", Settings)
LADDERS_KEY = web.AppKey("ladders", SeasonRecord)
"""The resolved ``LADDERS`` with the seasons started since (``stream season start``; read every SEASON_REFRESH_S)."""
PROBE_KEY: web.AppKey[KafkaProbe | None] = web.AppKey("kafka_probe")
STATUS_KEY: web.AppKey[WorkerStatus | None] = web.AppKey("worker_status")
STREAMS_KEY: web.AppKey[list[int]] = web.AppKey("event_streams")  # [open event streams]
DLQ_READS_KEY = web.AppKey("dlq_reads", asyncio.Semaphore)
CACHE_KEY = web.AppKey("response_cache", ResponseCache)
PREDICTIONS_KEY = web.AppKey("prediction_cache", ResponseCache)

DEFAULT_PAGE = 50
DEFAULT_HISTORY = 100
DEFAULT_ROUNDS_PAGE = 20
DEFAULT_LADDERS_PAGE = 100
DEFAULT_BINS = 30
MAX_BINS = 200
DEFAULT_ACTIVITY_POINTS = 60
MAX_ACTIVITY_POINTS = 500
DEFAULT_REJECTED = 50
MAX_REJECTED = 500
CONCURRENT_DLQ_READS = 2
"""Dead-letter reads (/rejected) running at once; more wait."""
CACHE_TTL_S = 1.0
"""A cached answer is served for at most this long, even while its ladder's version holds."""
CACHE_FRESH_S = 0.1
"""A cached answer younger than this is served without reading the ladder's version: answers lag
Redis by at most this, and the events stream announces a change this long after seeing it."""
CACHE_MAX_BYTES = 32 * 1024 * 1024
CACHE_MAX_ENTRY_BYTES = 1024 * 1024
"""Larger answers (a big round's page) are computed for every request, never kept."""
PREDICTIONS_MAX_BYTES = 8 * 1024 * 1024
STREAMS_RETRY_AFTER_S = 30
"""Retry-After of an events request refused because API_MAX_EVENT_STREAMS are open."""
PREDICT_SAMPLES = 20_000
PREDICT_SEED = 0
SSE_POLL_S = 1.0
"""How often the events stream polls the ladder's ``updated_at``."""
SSE_HEARTBEAT_S = 15.0
SSE_MAX_S = 300.0
"""An events connection is closed after this long; EventSource reconnects by itself."""

@web.middleware
async def count_requests(request: web.Request, handler: Any) -> web.StreamResponse:
    response: web.StreamResponse = await handler(request)
    resource = request.match_info.route.resource
    route = resource.canonical if resource is not None else "unmatched"
    metrics_.API_REQUESTS.labels(route=route, status=str(response.status)).inc()  # ems_api_requests_total
    return response


@web.middleware
async def current_seasons(request: web.Request, handler: Any) -> web.StreamResponse:
    """The seasons started since (``stream season start``) re-read every SEASON_REFRESH_S before a ladder's
    routes, so the API uses the schedule the workers rate by (Redis unreachable: the last one read)."""
    if request.path.startswith("/api/ladders/"):  # a ladder's routes
        try:
            await request.app[LADDERS_KEY].read(request.app[REDIS_KEY])
        except (RedisError, OSError) as exc:
            log.warning("seasons of record not read (%s: %s): the schedule last read serves", type(exc).__name__, exc)
    return cast(web.StreamResponse, await handler(request))


def _redis(request: web.Request) -> AsyncRedis:
    return request.app[REDIS_KEY]


def _max_id(request: web.Request) -> int:
    return request.app[SETTINGS_KEY].max_id_length


def _ladder_name(request: web.Request) -> str:
    return inputs.ident(inputs.path_param(request, "ladder", "ladder"), "ladder", _max_id(request))


async def _unknown_ladder(request: web.Request, ladder: str) -> ApiError:
    """404 ``unknown_ladder`` whose message names the closest known ladders and lists the known ones."""
    return not_found(queries.unknown_ladder_message(ladder, await queries.ladders(_redis(request))),
                     code="unknown_ladder")


async def _ladder(request: web.Request) -> str:
    """The path's ladder, which must exist (404 otherwise)."""
    ladder = _ladder_name(request)
    if not await queries.ladder_exists(_redis(request), ladder):
        raise await _unknown_ladder(request, ladder)
    return ladder


def _item_id(request: web.Request, param: str, what: str) -> str:
    """The player or round id: the path segment ``{param}``, or on the query-form routes the ``id`` query
    parameter (URL parsers remove ``.`` and ``..`` as dot-segments, even written ``%2E``)."""
    resource = request.match_info.route.resource
    in_path = resource is not None and f"{{{param}}}" in resource.canonical
    raw = inputs.path_param(request, param, what) if in_path else request.query.get("id", "")
    return inputs.ident(raw, what, _max_id(request))


def _display(request: web.Request, ladder: str) -> DisplayConfig:
    return request.app[LADDERS_KEY].of(ladder).display


def _with_status(request: web.Request, ladder: str, items: list[dict[str, Any]]) -> None:
    """Add each rating's interval, provisional status, eligibility and drifted sigma at read time
    (:mod:`stream.pipeline.status`) to ``items`` (dicts with mu, sigma, rounds, last_time)."""
    fields = rating_status.status_fields(request.app[LADDERS_KEY].of(ladder), [i.get("mu") for i in items],
                                  [i.get("sigma") for i in items], [i.get("rounds") for i in items],
                                  [i.get("last_time") for i in items], time.time())
    for item, extra in zip(items, fields):
        item.update(extra)


# ---- handlers ---------------------------------------------------------------------------
async def health(request: web.Request) -> web.Response:
    """Redis (pinged now) and Kafka (the background check's last result, with the workers' lag): 503 only
    when Redis fails; Kafka down is ``degraded`` with 200 (``kafka`` null where nothing checks it)."""
    redis_ok, _ = await probes.redis_answers(_redis(request))
    probe = request.app[PROBE_KEY]
    kafka = probe.health() if probe is not None else None
    healthy = redis_ok and (kafka is None or kafka.ok is not False)
    return web.json_response({"status": "ok" if healthy else "degraded", "redis": redis_ok,
                              "kafka": kafka.to_dict() if kafka is not None else None},
                             status=200 if redis_ok else 503)


async def live(request: web.Request) -> web.Response:
    """Liveness: in-process only (``probes.live``)."""
    return probes.json_verdict(*probes.live(request.app[STATUS_KEY], request.app[SETTINGS_KEY]))


async def ready(request: web.Request) -> web.Response:
    """Readiness: Redis, Kafka, partitions assigned, lag under READY_MAX_LAG_S (``probes.ready``)."""
    probe = request.app[PROBE_KEY]
    return probes.json_verdict(*await probes.ready(_redis(request), probe.health() if probe is not None else None,
                                                   request.app[STATUS_KEY], request.app[SETTINGS_KEY]))


async def metrics(request: web.Request) -> web.Response:
    return web.Response(body=generate_latest(), headers={"Content-Type": CONTENT_TYPE_LATEST})


async def openapi(request: web.Request) -> web.Response:
    return web.Response(body=OPENAPI_PATH.read_bytes(), content_type="application/json")


async def index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC_DIR / "index.html")


def _json_body(body: bytes) -> web.Response:
    return web.Response(body=body, content_type="application/json")


LadderAnswer = Callable[[web.Request, str], Awaitable[dict[str, Any]]]


def cached_by_ladder(answer: LadderAnswer) -> Callable[[web.Request], Awaitable[web.Response]]:
    """A GET handler serving ``answer(request, ladder)`` for the path's ladder (404 when unknown) as JSON,
    from the response cache (:mod:`stream.api.cache`)."""
    async def handler(request: web.Request) -> web.Response:
        cache = request.app[CACHE_KEY]
        fresh = cache.fresh(request.raw_path)
        if fresh is not None:
            return _json_body(fresh)
        ladder = _ladder_name(request)
        version = await queries.ladder_version(_redis(request), ladder)
        if version is None:
            raise await _unknown_ladder(request, ladder)

        async def compute() -> bytes:
            return orjson.dumps(await answer(request, ladder))

        return _json_body(await cache.get(request.raw_path, version, compute))

    handler.__name__, handler.__doc__ = answer.__name__, answer.__doc__
    return handler


async def list_ladders(request: web.Request) -> web.Response:
    """A page of the ladders, by name; their summaries in one Redis round trip. Cached for
    CACHE_TTL_S (no one version covers every ladder)."""
    offset = inputs.int_query(request, "offset", 0, low=0, high=inputs.MAX_OFFSET)
    limit = inputs.int_query(request, "limit", DEFAULT_LADDERS_PAGE, low=1, high=inputs.MAX_PAGE_LIMIT)

    async def compute() -> bytes:
        total, page = await queries.ladders_page(_redis(request), offset=offset, limit=limit)
        return orjson.dumps({"total": total, "offset": offset, "limit": limit, "ladders": page})

    return _json_body(await request.app[CACHE_KEY].get(("ladders", offset, limit), None, compute))


@cached_by_ladder
async def get_ladder(request: web.Request, ladder: str) -> dict[str, Any]:
    summary = await queries.ladder_summary(_redis(request), ladder)
    if summary is None:
        raise await _unknown_ladder(request, ladder)
    cfg = request.app[LADDERS_KEY].of(ladder)
    return {**summary, "display": cfg.display.to_dict(),
            "model": {"name": cfg.model, "params": dataclasses.asdict(cfg.params)}}


@cached_by_ladder
async def get_leaderboard(request: web.Request, ladder: str) -> dict[str, Any]:
    offset = inputs.int_query(request, "offset", 0, low=0, high=inputs.MAX_OFFSET)
    limit = inputs.int_query(request, "limit", DEFAULT_PAGE, low=1, high=inputs.MAX_PAGE_LIMIT)
    search = request.query.get("search", "")
    if request.query.get("eligible", "") in ("1", "true"):  # the players the ladder's rules admit
        if search:
            raise bad_request("eligible and search do not combine")
        return await eligibility.eligible_page(_redis(request), request.app[LADDERS_KEY].of(ladder), ladder,
                                               offset=offset, limit=limit)
    if search:
        search = inputs.ident(search, "search", _max_id(request))
        page = await queries.search_leaderboard(_redis(request), ladder, search, offset=offset, limit=limit)
    else:
        page = await queries.leaderboard(_redis(request), ladder, offset=offset, limit=limit)
    out = page.to_dict()
    _with_status(request, ladder, out["rows"])
    return out


@cached_by_ladder
async def get_distribution(request: web.Request, ladder: str) -> dict[str, Any]:
    """The ladder's rating distribution (players per equal slice of the display ratings) and where
    each tier starts on the display scale (its promotion threshold shown as a rating)."""
    bins = inputs.int_query(request, "bins", DEFAULT_BINS, low=1, high=MAX_BINS)
    dist = await queries.rating_distribution(_redis(request), ladder, bins)
    cfg = _display(request, ladder)
    starts = display_rating([threshold for _, threshold in cfg.tiers], 0.0, cfg).tolist()
    tiers = [{"tier": name, "from": None if i == 0 else starts[i]} for i, (name, _) in enumerate(cfg.tiers)]
    return {**dist, "tiers": tiers}


@cached_by_ladder
async def get_activity(request: web.Request, ladder: str) -> dict[str, Any]:
    """How the ladder's rounds accumulated over time: evenly spaced samples of its rounds index."""
    points = inputs.int_query(request, "points", DEFAULT_ACTIVITY_POINTS, low=1, high=MAX_ACTIVITY_POINTS)
    return await queries.rounds_over_time(_redis(request), ladder, points)


async def _of_player(request: web.Request, ladder: str, read: Callable[..., Awaitable[Any]]) -> Any:
    """``read(redis, ladder, player, history_limit=...)`` of the path's player (404 when it finds none, naming
    the rated players whose ids look like it)."""
    player = _item_id(request, "player", "player")
    history = inputs.int_query(request, "history", DEFAULT_HISTORY, low=0, high=inputs.MAX_HISTORY)
    found = await read(_redis(request), ladder, player, history_limit=history)
    if found is None:
        similar = await queries.similar_players(_redis(request), ladder, player)
        raise not_found(queries.unknown_player_message(ladder, player, similar), code="unknown_player")
    return found


@cached_by_ladder
async def get_player(request: web.Request, ladder: str) -> dict[str, Any]:
    view = await _of_player(request, ladder, queries.player)
    league, division = league_division(view.tier, _display(request, ladder))
    out = {**view.to_dict(), "league": league, "division": division}
    _with_status(request, ladder, [out])
    rating_status.add_intervals(out["history"], _display(request, ladder).interval_z)
    return out


@cached_by_ladder
async def get_player_ranks(request: web.Request, ladder: str) -> dict[str, Any]:
    """A player's leaderboard place and tier after each rated round (the place measured against
    today's leaderboard: see :func:`stream.store.queries.rank_timeline`), and the ladder's tiers."""
    timeline = await _of_player(request, ladder, queries.rank_timeline)
    out = {**timeline, "tiers": list(_display(request, ladder).tier_names)}
    rating_status.add_intervals(out["points"], _display(request, ladder).interval_z, mu="mu", sigma="sigma")
    return out


@cached_by_ladder
async def list_rounds(request: web.Request, ladder: str) -> dict[str, Any]:
    offset = inputs.int_query(request, "offset", 0, low=0, high=inputs.MAX_OFFSET)
    limit = inputs.int_query(request, "limit", DEFAULT_ROUNDS_PAGE, low=1, high=inputs.MAX_PAGE_LIMIT)
    rounds = await queries.recent_rounds(_redis(request), ladder, offset=offset, limit=limit)
    return {"ladder": ladder, "offset": offset, "limit": limit, "rounds": rounds}


@cached_by_ladder
async def get_round(request: web.Request, ladder: str) -> dict[str, Any]:
    round_id = _item_id(request, "round_id", "round")
    view = await queries.round_view(_redis(request), ladder, round_id)
    if view is None:
        raise not_found(f"unknown round {round_id!r} in ladder {ladder!r}", code="unknown_round")
    out = view.to_dict()
    rating_status.add_intervals(out["results"], _display(request, ladder).interval_z)
    return out


async def predict(request: web.Request) -> web.Response:
    """Win probabilities, expected order, rank distribution and match quality for a lobby, by the ladder's
    model (unrated players: its newcomer prior, ``known: false``); cached under the players' states."""
    ladder = _ladder_name(request)
    args: Any = {"players": "", **request.query}  # a POST's: its body's
    if request.method == "POST":
        try:
            args = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            args = None
        if not isinstance(args, dict):
            raise bad_request("body must be a JSON object", code="not_json")
    raw_players, raw_weight, raw_teams, raw_margin = map(args.get, ("players", "weight", "teams", "draw_margin"))
    teams = None if raw_teams is None else inputs.team_list(raw_teams, _max_id(request))  # teams=a,b;c,d
    players = inputs.player_list(raw_players, _max_id(request)) if teams is None else teams[0]
    weight = inputs.float_query(raw_weight, "weight", 1.0, low=0.0, high=inputs.MAX_WEIGHT)
    margin = 0.0 if raw_margin in (None, "", 0, "0") else inputs.float_query(  # rating points, default 0
        raw_margin, "draw_margin", 0.0, low=0.0, high=inputs.MAX_DRAW_MARGIN)
    cfg = request.app[LADDERS_KEY].of(ladder)
    if teams is not None:  # cached as a lobby's, under the players' states, their teams and shares too
        if cfg.rating_model is not None:
            raise bad_request(f"team predictions use Elo-MMR for teams; ladder {ladder!r} is rated by "
                              f"{cfg.model!r}", code="teams_unsupported")
        _, entry, shares = teams
        key = (ladder, "teams", tuple(players), tuple(entry), tuple(shares), weight, margin)
        return await _cached_prediction(
            request, ladder, key, players,
            lambda states: _team_prediction(cfg.newcomer, ladder, players, entry, shares, states, weight, margin,
                                            cfg.display.interval_z))
    if margin and cfg.rating_model is not None:
        raise bad_request(f"draw_margin is Elo-MMR's; ladder {ladder!r} is rated by {cfg.model!r}, whose own tie "
                          "probabilities are pairwise_tie", code="bad_request")
    return await _cached_prediction(request, ladder, (ladder, tuple(players), weight, margin), players,
                                    lambda states: _prediction(cfg, ladder, players, states, weight, margin))


States = list[tuple[float, float] | None]
"""Each player's stored (mu, sigma), None for a player the ladder has not rated."""


def _next_round_states(cfg: LadderConfig, stored: list[tuple[float, float, float] | None], now: float) -> States:
    """Each rated player's (mu, sigma) as a round now would rate from (a new season's soft reset:
    ``engine.seasons.next_round_view``)."""
    rows = [s for s in stored if s is not None]
    if not rows:
        return [None] * len(stored)
    table = np.array(rows, dtype=np.float64)
    mu, sigma = next_round_view(cfg.params, table[:, 0], table[:, 1], table[:, 2], now)
    it = iter(zip(mu.tolist(), sigma.tolist()))
    return [None if s is None else next(it) for s in stored]


async def _cached_prediction(request: web.Request, ladder: str, key: tuple[Any, ...], players: list[str],
                             answer: Callable[[States], Awaitable[dict[str, Any]]]) -> web.Response:
    """A prediction's answer, cached under ``key`` and the players' current states (computed
    once for concurrent requests, served without Redis while fresh)."""
    cache = request.app[PREDICTIONS_KEY]
    fresh = cache.fresh(key)
    if fresh is not None:
        return _json_body(fresh)
    stored = await queries.lobby_state(_redis(request), ladder, players)
    if stored is None:
        raise await _unknown_ladder(request, ladder)
    states = _next_round_states(request.app[LADDERS_KEY].of(ladder), stored, time.time())

    async def compute() -> bytes:
        out = await answer(states)
        out["unrated"] = [{"player": p, "did_you_mean": await queries.similar_players(_redis(request), ladder, p)}
                          for p, s in zip(players, states) if s is None]  # a typo'd id is an unrated player
        return orjson.dumps(out)

    return _json_body(await cache.get(key, tuple(states), compute))


def _beliefs(params: Params, players: list[str], states: States,
             z: float) -> tuple[np.ndarray, np.ndarray, list[dict[str, Any]]]:
    """Each player's mu and sigma (the newcomer prior when unrated) and his entry in the answer, with the
    interval mu +/- z*sigma that every answer carries."""
    mu = np.array([s[0] if s else params.mu_noob for s in states])
    sigma = np.array([s[1] if s else params.sig_noob for s in states])
    rows = [{"player": p, "known": s is not None, "mu": m, "sigma": d, "interval": [m - z * d, m + z * d]}
            for p, s, m, d in zip(players, states, mu.tolist(), sigma.tolist())]
    return mu, sigma, rows


async def _team_prediction(params: Params, ladder: str, players: list[str], entry: list[int], shares: list[float],
                           states: list[tuple[float, float] | None], weight: float, margin: float,
                           interval_z: float = 2.0) -> dict[str, Any]:
    """The answer of a team prediction (``engine.predict.predict_teams``): per team, per pair of teams,
    the match quality, and for two teams the three outcomes."""
    mu, sigma, rows = _beliefs(params, players, states, interval_z)
    model = PerformanceModel.from_params(params, weight)
    teams = np.asarray(entry, dtype=np.int64)
    pred = await asyncio.to_thread(predict_teams, mu, sigma, teams, np.asarray(shares), model, draw_margin=margin,
                                   samples=PREDICT_SAMPLES, seed=PREDICT_SEED)
    lobby = pred.lobby
    out: dict[str, Any] = {
        "ladder": ladder,
        "model": {"kind": model.kind, "beta": model.beta, "gamma": model.gamma, "weight": weight,
                  "draw_margin": margin, "team": "weighted-average member (Elo-MMR for teams)"},
        "teams": [
            {"team": k, "mu": float(pred.mu[k]), "sigma": float(pred.sigma[k]),
             "win_probability": float(lobby.rank_distribution[k][0]), "expected_rank": float(lobby.expected_rank[k]),
             "rank_distribution": lobby.rank_distribution[k].tolist(),
             "players": [{**row, "weight": shares[i]} for i, row in enumerate(rows) if entry[i] == k]}
            for k in range(len(pred.mu))
        ],
        "expected_order": lobby.expected_order.tolist(),
        "pairwise": pred.win.tolist(),
        "draw": pred.draw.tolist(),
        "quality": lobby.quality,
    }
    if len(pred.mu) == 2:
        out.update(first_wins=float(pred.win[0, 1]), draw_probability=float(pred.draw[0, 1]),
                   second_wins=float(pred.win[1, 0]))
    return out


async def _prediction(cfg: LadderConfig, ladder: str, players: list[str], states: list[tuple[float, float] | None],
                      weight: float, margin: float = 0.0) -> dict[str, Any]:
    """The prediction by the ladder's model (``outcome_model``: its rating-only model, or Elo-MMR,
    with pairwise draws within ``margin``); ``model.draws_rate`` says whether a draw would rate."""
    mu, sigma, rows = _beliefs(cfg.newcomer, players, states, cfg.display.interval_z)
    model = outcome_model(cfg, weight)
    pred = await asyncio.to_thread(predict_lobby, mu, sigma, model, draw_margin=margin, samples=PREDICT_SAMPLES,
                                   seed=PREDICT_SEED)
    return {
        "ladder": ladder,
        "model": model.describe(cfg.model, weight) | {"draws_rate": cfg.draws_rate}
        | ({"draw_margin": margin} if cfg.rating_model is None else {}),
        "players": [{**row, "win_probability": float(pred.rank_distribution[i][0]), "expected_rank":
                     float(pred.expected_rank[i]), "rank_distribution": pred.rank_distribution[i].tolist()}
                    for i, row in enumerate(rows)],
        "expected_order": [players[i] for i in pred.expected_order.tolist()],
        "pairwise": pred.pairwise.tolist(),
        "pairwise_tie": None if pred.tie is None else pred.tie.tolist(),
        "first_ahead_of_second": float(pred.pairwise[0, 1]),
        "quality": pred.quality,
    }


async def events(request: web.Request) -> web.StreamResponse:
    """Server-Sent Events: ``update`` when the ladder's ``updated_at`` changes, CACHE_FRESH_S after (so the
    page it makes read shows it); at most API_MAX_EVENT_STREAMS at once (503 with Retry-After beyond)."""
    ladder = await _ladder(request)
    r = _redis(request)
    open_streams = request.app[STREAMS_KEY]
    if open_streams[0] >= request.app[SETTINGS_KEY].api_max_event_streams:
        raise ApiError(503, "too_many_streams", "too many live-update connections; retry later",
                       headers={"Retry-After": str(STREAMS_RETRY_AFTER_S)})
    open_streams[0] += 1
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                                           "X-Accel-Buffering": "no"})
    try:
        await response.prepare(request)
        last: float | None = None
        started = last_write = time.monotonic()
        while time.monotonic() - started < SSE_MAX_S:
            if request.transport is None or request.transport.is_closing():
                break  # the client went away since the last write
            updated_at = await queries.ladder_updated_at(r, ladder)
            now = time.monotonic()
            if updated_at != last:
                last = updated_at
                await asyncio.sleep(CACHE_FRESH_S)  # answers cached before the change have aged out
                data = json.dumps({"ladder": ladder, "updated_at": updated_at})
                await response.write(f"event: update\ndata: {data}\n\n".encode())
                last_write = now
            elif now - last_write >= SSE_HEARTBEAT_S:
                await response.write(b": ping\n\n")
                last_write = now
            await asyncio.sleep(SSE_POLL_S)
    except (ConnectionResetError, ClientConnectionResetError):
        pass  # the client went away (a closed tab): nothing to report
    finally:
        open_streams[0] -= 1
    return response


async def ladder_health(request: web.Request) -> web.Response:
    """The ladder's rating health (``store.health.ladder_health``; 404 until a round is scored)."""
    ladder = await _ladder(request)
    found = await store_health.ladder_health(_redis(request), ladder)
    if found is None:
        raise not_found(f"no rating health recorded for ladder {ladder!r} yet", code="no_health")
    return web.json_response(found)


async def rejected(request: web.Request) -> web.Response:
    """The ladder's most recent dead letters (``rounds-dlq``); the ladder need not exist in Redis."""
    ladder = _ladder_name(request)
    limit = inputs.int_query(request, "limit", DEFAULT_REJECTED, low=1, high=MAX_REJECTED)
    settings = request.app[SETTINGS_KEY]
    try:
        async with request.app[DLQ_READS_KEY]:  # each read is a Kafka client in a thread: a few at a time
            found = await asyncio.to_thread(deadletters.recent, settings, limit=limit, ladder=ladder)
    except Exception as exc:  # noqa: BLE001 - Kafka unreachable or refusing: say so, 503
        raise ApiError(503, "kafka_unavailable", f"cannot read the dead-letter topic: {type(exc).__name__}") from None
    return web.json_response({"ladder": ladder, "topic": settings.topic(ROUNDS_DLQ),
                              "rejections": [x.to_dict() for x in found]})


async def what_if(request: web.Request) -> web.Response:
    """A round's rating changes from the live state, as the stream would rate it; writes nothing
    (:mod:`stream.api.whatif`)."""
    ladder = await _ladder(request)
    cfg = request.app[LADDERS_KEY].of(ladder)
    answer = await whatif_api.what_if(request, _redis(request), cfg, ladder, Limits.from_settings(request.app[SETTINGS_KEY]))
    return _json_body(orjson.dumps(answer))


async def explain_change(request: web.Request) -> web.Response:
    """Why a stored rating change is what it is, term by term and in words (:mod:`stream.pipeline.explain`)."""
    ladder = _ladder_name(request)
    player = _item_id(request, "player", "player")
    round_id = _item_id(request, "round_id", "round")
    try:
        answer = await explain.explain_change(_redis(request), request.app[LADDERS_KEY].of(ladder), ladder, player,
                                              round_id)
    except explain.ExplainRefused as refused:
        raise not_found(refused.message, code=refused.code) from None
    return _json_body(orjson.dumps(answer))


# ---- the app ----------------------------------------------------------------------------
def create_app(redis_client: AsyncRedis, settings: Settings, *, probe: KafkaProbe | None = None,
               status: WorkerStatus | None = None) -> web.Application:
    """The read API + dashboard over ``redis_client`` (the caller's to close); ``probe``: the Kafka check
    /health reports; ``status``: this process's pipeline, for /live and /ready (None: the API alone)."""
    app = web.Application(middlewares=[count_requests, json_errors, current_seasons],
                          client_max_size=inputs.MAX_BODY_BYTES)
    app[REDIS_KEY] = redis_client
    app[SETTINGS_KEY] = settings
    app[LADDERS_KEY] = SeasonRecord(parse_ladders(settings.ladders, engine_preset=settings.engine_preset,
                                                  display_config=settings.display_config), settings.season_refresh_s)
    app[PROBE_KEY] = probe
    app[STATUS_KEY] = status
    app[STREAMS_KEY] = [0]
    app[DLQ_READS_KEY] = asyncio.Semaphore(CONCURRENT_DLQ_READS)
    app[CACHE_KEY] = ResponseCache(ttl_s=CACHE_TTL_S, fresh_s=CACHE_FRESH_S, max_bytes=CACHE_MAX_BYTES,
                                   max_entry_bytes=CACHE_MAX_ENTRY_BYTES)
    app[PREDICTIONS_KEY] = ResponseCache(ttl_s=math.inf, fresh_s=CACHE_FRESH_S, max_bytes=PREDICTIONS_MAX_BYTES,
                                         max_entry_bytes=CACHE_MAX_ENTRY_BYTES)
    app.cleanup_ctx.append(health_export.exporter(REDIS_KEY))  # ladders' rating health -> /metrics
    app.router.add_get("/", index)
    app.router.add_static("/static", STATIC_DIR)
    app.router.add_get("/health", health)
    app.router.add_get("/live", live)
    app.router.add_get("/ready", ready)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/openapi.json", openapi)
    app.router.add_get("/api/ladders", list_ladders)
    app.router.add_get("/api/ladders/{ladder}", get_ladder)
    app.router.add_get("/api/ladders/{ladder}/leaderboard", get_leaderboard)
    app.router.add_get("/api/ladders/{ladder}/distribution", get_distribution)
    app.router.add_get("/api/ladders/{ladder}/activity", get_activity)
    app.router.add_get("/api/ladders/{ladder}/players/{player}", get_player)
    app.router.add_get("/api/ladders/{ladder}/player", get_player)  # ?id=: any id, "." and ".." too
    app.router.add_get("/api/ladders/{ladder}/players/{player}/ranks", get_player_ranks)
    app.router.add_get("/api/ladders/{ladder}/player/ranks", get_player_ranks)  # ?id=
    app.router.add_get("/api/ladders/{ladder}/rounds", list_rounds)
    app.router.add_get("/api/ladders/{ladder}/rounds/{round_id}", get_round)
    app.router.add_get("/api/ladders/{ladder}/round", get_round)  # ?id=
    app.router.add_get("/api/ladders/{ladder}/predict", predict)
    app.router.add_post("/api/ladders/{ladder}/predict", predict)
    app.router.add_get("/api/ladders/{ladder}/events", events)
    app.router.add_get("/api/ladders/{ladder}/health", ladder_health)
    app.router.add_get("/api/ladders/{ladder}/rejected", rejected)
    app.router.add_post("/api/ladders/{ladder}/what-if", what_if)
    app.router.add_get("/api/ladders/{ladder}/players/{player}/changes/{round_id}/explain", explain_change)
    app[queues.QUEUES_KEY] = load_queues(settings, app[LADDERS_KEY].configured)  # QUEUES: a bad one exits 2 (SettingsError)
    app.router.add_routes(queues.routes(_redis))
    app.router.add_routes(seasons.routes(_redis, lambda request: request.app[LADDERS_KEY]))
    return app
