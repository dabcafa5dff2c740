"""The read API's matchmaking endpoints over a real Redis: answers from the pool's state, valid
against openapi.json; unknown queues, tickets and matches are 404."""

from __future__ import annotations

import asyncio
import json

import jsonschema
import redis.asyncio as aioredis

from apiclient import get_all
from stream.api.app import OPENAPI_PATH
from stream.store.matchmaking import CommitMatch, MatchStore
from stream.store.store import Store

DOC = json.loads(OPENAPI_PATH.read_text())
QUEUES = json.dumps({"duel": {"ladder": "duel", "tick_interval_s": 0.5}})


def check(path: str, status: int, body: object) -> None:
    response = DOC["paths"][path]["get"]["responses"][str(status)]
    if "$ref" in response:
        response = DOC["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
    schema = {**response["content"]["application/json"]["schema"], "components": DOC["components"]}
    jsonschema.Draft202012Validator(schema).validate(body)


def seed(redis_url: str) -> None:
    async def go() -> None:
        ms = MatchStore(Store(aioredis.Redis.from_url(redis_url), history_length=3))
        await ms.join("duel", [(t, [t.upper()], 100.0, None) for t in "abc"], now=101.0, hold_s=600.0)
        body = json.dumps({"match_id": "m-1", "ladder": "duel", "teams": [["A"], ["B"]], "quality": 0.75,
                           "win_probability": [0.5, 0.5]})
        await ms.commit("duel", [CommitMatch("m-1", 104.0, body, b"[]", 0.75, ["a", "b"], [4.0, 2.0], ["A", "B"])], [],
                        now=104.0)
        await ms.release("duel", ["m-1"], now=110.0, hold_s=600.0)
        await ms.store.close()
    asyncio.run(go())


def test_queue_endpoints(redis_url: str) -> None:
    seed(redis_url)
    requests = [
        ("/api/queues", "/api/queues", 200),
        ("/api/queues/{queue}", "/api/queues/duel", 200),
        ("/api/queues/{queue}", "/api/queues/nope", 404),
        ("/api/queues/{queue}/tickets/{ticket}", "/api/queues/duel/tickets/a", 200),
        ("/api/queues/{queue}/tickets/{ticket}", "/api/queues/duel/tickets/c", 200),
        ("/api/queues/{queue}/tickets/{ticket}", "/api/queues/duel/tickets/zz", 404),
        ("/api/queues/{queue}/matches/{match_id}", "/api/queues/duel/matches/m-1", 200),
        ("/api/queues/{queue}/matches/{match_id}", "/api/queues/duel/matches/m-2", 404),
    ]
    answers = get_all(redis_url, [url for _, url, _ in requests], queues=QUEUES)
    assert [status for status, _ in answers] == [status for *_, status in requests]
    for (template, _, status), (_, body) in zip(requests, answers):
        check(template, status, body)
    queue = answers[1][1]
    assert queue["tickets_waiting"] == 1 and queue["matches_in_play"] == 0
    assert queue["wait_s"]["tickets"] == 2 and queue["wait_s"]["p50"] == 3.0 and queue["quality"]["mean"] == 0.75
    assert answers[0][1]["queues"][0]["name"] == "duel"
    assert answers[3][1]["status"] == "matched" and answers[3][1]["match_id"] == "m-1"
    assert answers[4][1]["status"] == "searching" and answers[4][1]["since"] == 100.0
    assert answers[6][1]["status"] == "rated" and answers[6][1]["match"]["win_probability"] == [0.5, 0.5]


def test_the_dashboard_page_reads_the_queue_endpoints(redis_url: str) -> None:
    from apiclient import with_client

    async def body(client):  # type: ignore[no-untyped-def]
        page = await client.get("/static/queues.html")
        index = await client.get("/")
        return page.status, await page.text(), await index.text()

    status, page, index = with_client(redis_url, body, queues=QUEUES)
    assert status == 200 and "/api/queues/${encodeURIComponent(queue)}" in page and 'fetch("/api/queues")' in page
    assert "/static/queues.html" in index
