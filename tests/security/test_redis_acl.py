"""Redis ACL users: the service's clients authenticate with user:password (REDIS_URL or
REDIS_USERNAME/REDIS_PASSWORD) against a real redis-server whose default user is off; the
documented reader user cannot write; wrong credentials fail with a clear, secret-free error."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest
import redis
from aiohttp.test_utils import TestClient, TestServer

import readside_data
from servers import ADMIN, READER, WRITER
from stream.api.app import create_app
from stream.connections import redis_client, redis_error_message
from stream.settings import Settings
from stream.stack.redis_server import RedisServer
from stream.store import queries
from stream.store.store import Store
from tests.store_calls import PlayerWrite, RoundWrites, apply, register_round, stored_player

#: Seconds a CLI subprocess may take.
CLI_TIMEOUT_S = 60


def url(server: RedisServer, user: str, password: str) -> str:
    return f"redis://{user}:{password}@127.0.0.1:{server.port}/0"


@pytest.fixture(scope="module")
def seeded(acl_redis: RedisServer) -> readside_data.Seeded:
    """The read side's test data, written with the admin user."""
    return readside_data.seed(url(acl_redis, *ADMIN))


def test_reader_user_reads_through_redis_client_and_cannot_write(acl_redis: RedisServer,
                                                                 seeded: readside_data.Seeded) -> None:
    settings = Settings(redis_url=url(acl_redis, *READER))

    async def go() -> None:
        client = redis_client(settings)
        try:
            page = await queries.leaderboard(client, seeded.ladder, offset=0, limit=100)
            assert page is not None and [row.player for row in page.rows] == seeded.ranking()
            with pytest.raises(redis.exceptions.NoPermissionError):
                await client.set("ems:intruder", b"1")
            with pytest.raises(redis.exceptions.NoPermissionError):
                await client.flushall()
        finally:
            await client.aclose()

    asyncio.run(go())


def test_credentials_from_redis_username_and_password_override_the_url(acl_redis: RedisServer,
                                                                       seeded: readside_data.Seeded) -> None:
    settings = Settings(redis_url=f"redis://127.0.0.1:{acl_redis.port}/0", redis_username=READER[0],
                        redis_password=READER[1])
    client = redis_client(settings, asyncio=False)
    try:
        assert client.sismember("ems:ladders", seeded.ladder)
        with pytest.raises(redis.exceptions.NoPermissionError):  # it is the reader, not a default user
            client.set("ems:intruder", b"1")
    finally:
        client.close()


def test_api_over_the_reader_user(acl_redis: RedisServer, seeded: readside_data.Seeded) -> None:
    settings = Settings(redis_url=url(acl_redis, *READER))

    async def go() -> tuple[int, dict, int]:
        client = redis_client(settings)
        http = TestClient(TestServer(create_app(client, settings)))
        await http.start_server()
        try:
            board = await http.get(f"/api/ladders/{seeded.ladder}/leaderboard?limit=100")
            health = await http.get("/health")
            return board.status, await board.json(), health.status
        finally:
            await http.close()
            await client.aclose()

    status, body, health = asyncio.run(go())
    assert status == 200 and health == 200
    assert [row["player"] for row in body["rows"]] == seeded.ranking()


def test_worker_user_runs_the_stores_scripts(acl_redis: RedisServer) -> None:
    """The worker's documented ACL (all but @dangerous on ems:*) is enough for the store's Lua writes."""
    settings = Settings(redis_url=url(acl_redis, *WRITER))

    async def go() -> tuple[list[list[bool]], dict[str, bytes]]:
        store = Store(redis_client(settings), history_length=3)
        try:
            await store.load_scripts()
            await register_round(store, "acl", "r1", content_hash="h", occurred_at=1.0, received_at=2.0, field_size=2)
            write = PlayerWrite(player="p", seq=1, mu=1600.0, sigma=90.0, rounds=1, last_round="r1", last_time=1.0,
                                display_rating=1420.0, tier="", state=b"\x01", change=b'{"player":"p"}', newcomer=True)
            applied = await apply(store, [RoundWrites("acl", "r1", [write])], now=3.0)
            return applied, await stored_player(store, "acl", "p")  # keys decoded, values bytes
        finally:
            await store.close()

    applied, player = asyncio.run(go())
    assert applied == [[True]]
    assert player, "the player hash was written"


@pytest.mark.parametrize("user, password", [(READER[0], "wrong-password"), ("nobody", "x"), ("default", "")])
def test_wrong_credentials_fail_with_a_clear_error(acl_redis: RedisServer, user: str, password: str) -> None:
    target = url(acl_redis, user, password) if password else f"redis://127.0.0.1:{acl_redis.port}/0"
    settings = Settings(redis_url=target)
    client = redis_client(settings, asyncio=False)
    with pytest.raises(redis.exceptions.AuthenticationError) as caught:
        client.get("ems:ladders")
    client.close()
    message = redis_error_message(settings, caught.value)
    assert "refused the credentials" in message
    assert password not in message if password else True
    assert f"127.0.0.1:{acl_redis.port}" in message


def test_cli_with_a_wrong_password_exits_4_with_a_one_line_error(acl_redis: RedisServer) -> None:
    password = "Wr0ng-Secret-5150"
    env = {**os.environ, "REDIS_URL": url(acl_redis, READER[0], password), "STACK_STATE_FILE": "/nonexistent"}
    done = subprocess.run([sys.executable, "-m", "stream", "leaderboard", "blitz", "--json"], env=env,
                          capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
    assert done.returncode == 4
    assert "refused the credentials" in done.stderr
    assert "Traceback" not in done.stderr
    assert password not in done.stdout + done.stderr
    assert json.dumps(password) not in done.stderr


def test_what_if_and_explain_over_the_reader_user(acl_redis: RedisServer, seeded: readside_data.Seeded) -> None:
    """The reader user (``+@read``, no scripts) answers what-if and explain: both read by plain
    read commands."""
    settings = Settings(redis_url=url(acl_redis, *READER))
    players = seeded.ranking()[:4]

    async def go() -> tuple[int, dict, int, dict]:
        client = redis_client(settings)
        http = TestClient(TestServer(create_app(client, settings)))
        await http.start_server()
        try:
            # the seeded hashes hold no real engine state: newcomers (their hashes are still read)
            body = {"standings": [{"player": f"new-{p}", "rank": i + 1} for i, p in enumerate(players)] + [
                {"player": "newcomer", "rank": 5}]}
            asked = await http.post(f"/api/ladders/{seeded.ladder}/what-if", json=body)
            why = await http.get(f"/api/ladders/{seeded.ladder}/players/{players[0]}/changes/r1/explain")
            return asked.status, await asked.json(), why.status, await why.json()
        finally:
            await http.close()
            await client.aclose()

    status, asked, why_status, why = asyncio.run(go())
    assert (status, why_status) == (200, 200), (asked, why)
    assert [c["player"] for c in asked["changes"]][-1] == "newcomer" and why["change"]["round_id"] == "r1"
