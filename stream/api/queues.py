"""The read API's matchmaking endpoints (registered by :func:`stream.api.app.create_app`):

* ``GET /api/queues``: every configured queue (``QUEUES``) with its configuration and state;
* ``GET /api/queues/{queue}``: one queue's state: tickets and players waiting, wait p50/p90/p99 of
  the recently matched tickets, quality of the recent matches (and their series, newest first);
* ``GET /api/queues/{queue}/tickets/{ticket}``: a ticket's status (searching, matched with its
  match id, cancelled, timed_out, rejected with its reason), 404 when unknown or forgotten;
* ``GET /api/queues/{queue}/matches/{match_id}``: a match as emitted (its predicted quality and win
  probabilities) and its outcome once its round (round_id = match_id) is rated.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from stream.api import inputs
from stream.api.errors import not_found
from stream.matchmaking import QueueConfig
from stream.store.client import AsyncRedis
from stream.store.matchmaking import match_record, queue_state, ticket_status

QUEUES_KEY: web.AppKey[dict[str, QueueConfig]] = web.AppKey("queues")


def _json(data: Any) -> web.Response:
    return web.Response(body=orjson.dumps(data), content_type="application/json")


def _queue(request: web.Request) -> QueueConfig:
    name = inputs.path_param(request, "queue", "queue")
    queue = request.app[QUEUES_KEY].get(name)
    if queue is None:
        raise not_found(f"no queue {name!r} in QUEUES", code="unknown_queue")
    return queue


def _config(queue: QueueConfig) -> dict[str, Any]:
    return {"name": queue.name, "ladder": queue.ladder, "teams": queue.teams, "team_size": queue.team_size,
            "max_wait_s": queue.max_wait_s, "tick_interval_s": queue.tick_interval_s}


def routes(redis_of: Any) -> list[web.RouteDef]:
    """The routes; ``redis_of(request)`` is the app's Redis client."""

    async def list_queues(request: web.Request) -> web.Response:
        client: AsyncRedis = redis_of(request)
        out = []
        for queue in request.app[QUEUES_KEY].values():
            summary = (await queue_state(client, queue.name)).summary(queue.name)
            summary.pop("recent_matches")
            out.append({**_config(queue), **summary})
        return _json({"queues": out})

    async def get_queue(request: web.Request) -> web.Response:
        queue = _queue(request)
        summary = (await queue_state(redis_of(request), queue.name)).summary(queue.name)
        return _json({**_config(queue), **summary})

    async def get_ticket(request: web.Request) -> web.Response:
        queue = _queue(request)
        ticket = inputs.path_param(request, "ticket", "ticket")
        status = await ticket_status(redis_of(request), queue.name, ticket)
        if status is None:
            raise not_found(f"no ticket {ticket!r} in queue {queue.name!r}", code="unknown_ticket")
        return _json({"ticket_id": ticket, "queue": queue.name, **status})

    async def get_match(request: web.Request) -> web.Response:
        queue = _queue(request)
        match_id = inputs.path_param(request, "match_id", "match_id")
        body, outcome = await match_record(redis_of(request), queue.name, match_id)
        if body is None:
            raise not_found(f"no match {match_id!r} in queue {queue.name!r}", code="unknown_match")
        status, _, when = outcome.partition("|") if outcome else ("in_play", "", "")
        return _json({"match": body, "status": status, "released_at": float(when) if when else None,
                      "round": f"/api/ladders/{body['ladder']}/rounds/{match_id}"})

    return [web.get("/api/queues", list_queues), web.get("/api/queues/{queue}", get_queue),
            web.get("/api/queues/{queue}/tickets/{ticket}", get_ticket),
            web.get("/api/queues/{queue}/matches/{match_id}", get_match)]
