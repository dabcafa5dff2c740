"""A Redis that stops answering (SIGSTOP: connections stay open, nothing replies) never stalls a
worker silently: the call times out after REDIS_SOCKET_TIMEOUT_S and is retried until Redis
answers again, and ``ems_handler_running_seconds`` shows the hung call meanwhile (also with no
timeout, where nothing fails). Plus TCP keepalive on the clients' sockets."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from stream.connections import redis_client
from stream.pipeline.retry import retrying
from stream.settings import Settings
from stream.stack.redis_server import RedisServer
from stream.store.store import Store

#: How long the tests keep Redis stopped.
STOPPED_S = 2.0


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[RedisServer]:
    started = RedisServer(workdir=tmp_path / "redis").start()
    yield started
    assert started.process is not None
    os.kill(started.process.pid, signal.SIGCONT)
    started.stop()


def sample(name: str, handler: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, {"handler": handler, **labels}) or 0.0


async def hang_and_resume(server: RedisServer, settings: Settings, handler: str) -> dict[str, float]:
    """Stop Redis under a retried Store call, read the gauges after STOPPED_S, resume it; the call
    must then return the right answer and the running gauge drop to 0."""
    assert server.process is not None
    store = Store(redis_client(settings), history_length=3)
    await store.client.hset("ems:player:{L|a}", mapping={"last_seq": 7, "state": b"s"})
    before = sample("ems_handler_failures_total", handler, kind="transient")
    os.kill(server.process.pid, signal.SIGSTOP)
    try:
        call = asyncio.create_task(retrying(lambda: store.load_states([("L", "a")]), "hung test call",
                                            max_delay_s=0.1, handler=handler))
        await asyncio.sleep(STOPPED_S)
        seen = {"running": sample("ems_handler_running_seconds", handler),
                "stuck": sample("ems_handler_stuck_seconds", handler),
                "timeouts": sample("ems_handler_failures_total", handler, kind="transient") - before,
                "done": float(call.done())}
    finally:
        os.kill(server.process.pid, signal.SIGCONT)
    states = await asyncio.wait_for(call, timeout=30)
    assert states.last_seq.tolist() == [7] and states.states == [b"s"]
    assert sample("ems_handler_running_seconds", handler) == 0.0
    assert sample("ems_handler_stuck_seconds", handler) == 0.0
    await store.close()
    return seen


def test_a_hung_call_times_out_is_retried_and_shows_in_the_gauges(server: RedisServer) -> None:
    settings = Settings(redis_url=server.url, redis_socket_timeout_s=0.3, redis_connect_timeout_s=0.3)
    seen = asyncio.run(hang_and_resume(server, settings, "test_hung_timeout"))
    assert seen["done"] == 0.0
    assert seen["running"] >= STOPPED_S * 0.8, seen
    assert seen["timeouts"] >= 2, seen  # timed out, retried, timed out again...
    assert seen["stuck"] > 0.0, seen


def test_without_a_timeout_the_hung_call_still_shows(server: RedisServer) -> None:
    settings = Settings(redis_url=server.url, redis_socket_timeout_s=0.0, redis_connect_timeout_s=0.0)
    seen = asyncio.run(hang_and_resume(server, settings, "test_hung_forever"))
    assert seen["running"] >= STOPPED_S * 0.8 and seen["timeouts"] == 0 and seen["stuck"] == 0.0, seen


def test_redis_connections_have_tcp_keepalive(server: RedisServer) -> None:
    client = redis_client(Settings(redis_url=server.url, redis_keepalive_s=45), asyncio=False)
    connection = client.connection_pool.get_connection()
    try:
        sock = connection._sock  # the connected socket (private attribute; test only)
        assert sock is not None
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 45
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == 15
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == 3
    finally:
        client.connection_pool.release(connection)
        client.close()
    off = redis_client(Settings(redis_url=server.url, redis_keepalive_s=0), asyncio=False)
    assert "socket_keepalive" not in off.connection_pool.connection_kwargs
    off.close()
