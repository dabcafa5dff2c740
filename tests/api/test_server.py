"""How the read API is served (stream/api/server.py): on its own event loop in a thread, so it
answers while the caller's loop is blocked (the worker's pipeline), over a bounded Redis pool."""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import redis

from readside_data import LADDER, seed
from stream.api.server import ApiThread
from stream.settings import Settings
from stream.stack.ports import free_port

BLOCK_S = 3.0


def _get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=30) as resp:
        resp.read()
        return int(resp.status)


def test_the_api_answers_while_the_callers_loop_is_blocked(redis_url: str) -> None:
    seed(redis_url)
    with ApiThread(Settings(redis_url=redis_url), host="127.0.0.1", port=free_port(), probe=False) as api:
        answered: list[float] = []

        def ask() -> None:
            started = time.monotonic()
            assert _get(f"{api.url}/api/ladders/{LADDER}/leaderboard") == 200
            answered.append(time.monotonic() - started)

        async def busy_pipeline() -> None:  # a handler hogging this thread's loop
            asker = threading.Thread(target=ask)
            asker.start()
            time.sleep(BLOCK_S)
            asker.join()

        asyncio.run(busy_pipeline())
    assert len(answered) == 1 and answered[0] < BLOCK_S / 2


def test_the_redis_pool_is_bounded(redis_url: str) -> None:
    """40 concurrent requests over a pool of 2: all answered, never more than 2 connections."""
    seed(redis_url)
    monitor = redis.Redis.from_url(redis_url)
    baseline = int(monitor.info("clients")["connected_clients"])
    settings = Settings(redis_url=redis_url, api_redis_max_connections=2)
    peak = 0
    with ApiThread(settings, host="127.0.0.1", port=free_port(), probe=False) as api:
        stop = threading.Event()

        def watch() -> None:
            nonlocal peak
            while not stop.is_set():
                peak = max(peak, int(monitor.info("clients")["connected_clients"]) - baseline)
                time.sleep(0.005)

        watcher = threading.Thread(target=watch)
        watcher.start()
        path = f"{api.url}/api/ladders/{LADDER}/predict?players=p01,p02,p03"
        with ThreadPoolExecutor(max_workers=40) as pool:
            statuses = list(pool.map(_get, [path] * 40))
        stop.set()
        watcher.join()
    monitor.close()
    assert statuses == [200] * 40
    assert 1 <= peak <= 2
