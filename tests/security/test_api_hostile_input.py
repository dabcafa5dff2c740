"""Hostile ladder / player / round / search values against every read endpoint of stream.api over a
real private Redis: always 4xx or a correct (literal) answer, never a 500; the keyspace is
unchanged and Redis executed read-only commands only; request bodies over the limit get 413."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

import redis
from aiohttp.test_utils import TestClient, TestServer

import readside_data
from stream.api import inputs
from stream.api.app import create_app
from stream.connections import redis_client
from stream.settings import Settings

HOSTILE = [
    "*", "?", "[a-z]*", "p0*", "p?1", "x[", "star*", "\\", "{blitz}", "{", "}", "..", "../..", "ems:*",
    "a\nb", "a\r\nFLUSHALL", "\x00", "\x1b[31mred", "\t", "%00", "' OR 1=1 --", "FLUSHALL", "KEYS *",
    "é👾", "x" * 200, "y" * 5000,
]
#: Commands a read-only request may make Redis run besides those Redis flags readonly (connection
#: housekeeping), plus the test's own CONFIG RESETSTAT and INFO.
CONNECTION_COMMANDS = {"ping", "client|setinfo", "client", "hello", "info", "select", "auth", "config",
                       "config|resetstat"}  # Redis 7 counts CONFIG RESETSTAT under its subcommand


def endpoints(ladder: str, value: str) -> list[tuple[str, str]]:
    """Every read route with ``value`` in each position it can take."""
    v = quote(value, safe="")
    lad = quote(ladder, safe="")
    return [
        ("GET", f"/api/ladders/{v}"), ("GET", f"/api/ladders/{v}/leaderboard"),
        ("GET", f"/api/ladders/{lad}/leaderboard?search={v}"), ("GET", f"/api/ladders/{v}/players/p01"),
        ("GET", f"/api/ladders/{lad}/players/{v}"), ("GET", f"/api/ladders/{v}/rounds"),
        ("GET", f"/api/ladders/{lad}/rounds/{v}"), ("GET", f"/api/ladders/{v}/rounds/r1"),
        ("GET", f"/api/ladders/{lad}/predict?players=p01,{v}"), ("GET", f"/api/ladders/{v}/predict?players=a,b"),
        ("GET", f"/api/ladders/{v}/events"), ("GET", f"/api/ladders/{lad}/leaderboard?offset={v}&limit={v}"),
        ("GET", f"/api/ladders/{lad}/players/p01?history={v}"),
        ("GET", f"/api/ladders/{lad}/player?id={v}"), ("GET", f"/api/ladders/{lad}/round?id={v}"),
        ("GET", f"/api/ladders/{lad}/players/{v}/changes/r1/explain"),
        ("GET", f"/api/ladders/{lad}/players/p01/changes/{v}/explain"),
        ("GET", f"/api/ladders/{v}/players/p01/changes/r1/explain"),
        ("GET", f"/api/ladders/{lad}/leaderboard?eligible={v}"),
    ]


def snapshot(url: str) -> dict[bytes, bytes]:
    """Every key's serialised value (DUMP): equal snapshots mean nothing was written."""
    r = redis.Redis.from_url(url)
    try:
        return {key: r.dump(key) for key in r.scan_iter(count=1000)}
    finally:
        r.close()


def executed_commands(url: str) -> set[str]:
    """Command names Redis has executed since the last CONFIG RESETSTAT."""
    r = redis.Redis.from_url(url, decode_responses=True)
    try:
        return {name.removeprefix("cmdstat_") for name in r.info("commandstats")}
    finally:
        r.close()


def write_commands(url: str, names: set[str]) -> set[str]:
    """Those of ``names`` that Redis does not flag readonly (connection housekeeping aside)."""
    r = redis.Redis.from_url(url, decode_responses=True)
    try:
        table = r.command()
    finally:
        r.close()
    return {name for name in names - CONNECTION_COMMANDS
            if "readonly" not in table.get(name.split("|")[0], {}).get("flags", [])}


def send_all(redis_url: str, requests: Iterable[tuple[str, str, str, bytes | None]]) -> list[tuple[str, int, Any]]:
    """Send each (label, method, path, body) to the read API over ``redis_url`` (Redis's command
    stats reset first, see :func:`executed_commands`); (label, status, JSON body or None) each."""
    admin = redis.Redis.from_url(redis_url)
    admin.config_resetstat()
    admin.close()
    settings = Settings(redis_url=redis_url)

    async def go() -> list[tuple[str, int, Any]]:
        client = redis_client(settings)
        http = TestClient(TestServer(create_app(client, settings)))
        await http.start_server()
        seen = []
        try:
            for label, method, path, data in requests:
                response = await http.request(method, path, data=data)
                body = await response.json() if response.content_type == "application/json" else None
                seen.append((label, response.status, body))
                response.close()
        finally:
            await http.close()
            await client.aclose()
        return seen

    return asyncio.run(go())


def test_hostile_values_never_500_and_never_write(redis_url: str) -> None:
    seeded = readside_data.seed(redis_url)
    before = snapshot(redis_url)
    results = send_all(redis_url, ((path, method, path, None) for value in HOSTILE
                                   for method, path in endpoints(seeded.ladder, value)))
    commands = executed_commands(redis_url)
    assert snapshot(redis_url) == before, "a read request changed the keyspace"
    assert write_commands(redis_url, commands) == set(), commands
    server_errors = [(path, status) for path, status, _ in results if status >= 500]
    assert server_errors == []
    for path, status, body in results:
        assert 200 <= status < 300 or 400 <= status < 500, (path, status)
        if status >= 400 and body is not None:
            assert set(body) == {"error", "message"}, (path, body)
        if "search=" in path and status == 200:
            prefix = [v for v in HOSTILE if quote(v, safe="") == path.split("search=", 1)[1]][0]
            players = [row["player"] for row in body["rows"]]
            assert all(p.startswith(prefix) for p in players), (prefix, players)  # literal, not a glob
    searched = {path.split("search=", 1)[1]: body for path, status, body in results if "search=" in path and status == 200}
    assert [row["player"] for row in searched[quote("star*", safe="")]["rows"]] == ["star*player"]
    assert searched[quote("p0*", safe="")]["rows"] == []  # unescaped, "p0*" would match p00..p09
    assert [row["player"] for row in searched[quote("x[", safe="")]["rows"]] == ["x[1]"]


def test_request_bodies_over_the_limit_get_413(redis_url: str) -> None:
    seeded = readside_data.seed(redis_url)
    settings = Settings(redis_url=redis_url)
    big = b'{"players": ["' + b"a" * (inputs.MAX_BODY_BYTES + 1) + b'", "b"]}'

    async def chunks() -> Any:
        for start in range(0, len(big), 4096):
            yield big[start:start + 4096]

    async def go() -> tuple[int, dict, int, int]:
        client = redis_client(settings)
        http = TestClient(TestServer(create_app(client, settings)))
        await http.start_server()
        try:
            path = f"/api/ladders/{seeded.ladder}/predict"
            sized = await http.post(path, data=big, headers={"Content-Type": "application/json"})
            streamed = await http.post(path, data=chunks(), headers={"Content-Type": "application/json"})
            fine = await http.post(path, json={"players": ["p01", "p02"]})
            return sized.status, await sized.json(), streamed.status, fine.status
        finally:
            await http.close()
            await client.aclose()

    sized, body, streamed, fine = asyncio.run(go())
    assert (sized, streamed, fine) == (413, 413, 200)
    assert body["error"] == "request_too_large"
