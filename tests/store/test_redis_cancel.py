"""A task cancelled while it talks to Redis ends with CancelledError, wherever the cancel lands.

On Python 3.11 redis-py's bounded write (``asyncio.wait_for``) drops a cancellation that lands as
the write completes (stream/store/cancel.py): a third of the cancels below were lost before
the fix, and a phase-one barrier cancelled by a timeout kept polling for ever.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable

from stream.connections import redis_client
from stream.store.cancel import CancelSafeSend
from stream.settings import Settings
from stream.store.store import Store

CANCELS = 300


async def count_dropped_cancels(work: Callable[[], Awaitable[str]], cancels: int, seed: int,
                                after: Callable[[int], Awaitable[None]] | None = None) -> tuple[int, int]:
    """(cancelled, dropped): ``cancels`` tasks running ``work`` (which loops until cancelled and
    returns only when it saw its own cancel dropped), each cancelled after a random delay of up to
    3 ms; ``after(k)`` runs after the k-th task ended. A task that returns dropped its cancel."""
    rng = random.Random(seed)
    dropped = 0
    for k in range(cancels):
        task = asyncio.ensure_future(work())
        await asyncio.sleep(rng.random() * 0.003)
        task.cancel()
        try:
            await task
            dropped += 1
        except asyncio.CancelledError:
            pass
        if after is not None:
            await after(k)
    return cancels, dropped


async def cancel_at_random(client: object, seed: int) -> tuple[int, int]:
    """(cancelled, dropped): tasks running pipelines through ``client``, each cancelled after a
    random delay; a task that returns instead of raising CancelledError dropped its cancel."""

    async def work() -> str:
        while True:
            pipe = client.pipeline(transaction=False)  # type: ignore[attr-defined]
            for k in range(20):
                pipe.hmget(f"k{k}", "a", "b")
            requested = asyncio.current_task().cancelling()  # type: ignore[union-attr]
            await pipe.execute()
            if asyncio.current_task().cancelling() > requested:  # type: ignore[union-attr]
                return "the cancel was dropped"

    return await count_dropped_cancels(work, CANCELS, seed)


def test_service_clients_never_drop_a_cancel(redis_url: str) -> None:
    async def body() -> tuple[int, int]:
        client = redis_client(Settings(redis_url=redis_url, redis_socket_timeout_s=10.0))
        try:
            assert issubclass(client.connection_pool.connection_class, CancelSafeSend)
            return await cancel_at_random(client, seed=1)
        finally:
            await client.aclose()

    cancelled, dropped = asyncio.run(body())
    assert dropped == 0, f"{dropped} of {cancelled} cancellations dropped"


def test_a_store_makes_any_client_cancel_safe_and_still_works(redis_url: str) -> None:
    import redis.asyncio as aioredis

    async def body() -> tuple[int, int, bytes | None]:
        store = Store(aioredis.Redis.from_url(redis_url, socket_timeout=10.0), history_length=10)
        try:
            outcome = await cancel_at_random(store.client, seed=2)
            await store.client.set("after", "ok")  # connections dropped on a cancel are replaced
            return (*outcome, await store.client.get("after"))
        finally:
            await store.close()

    cancelled, dropped, value = asyncio.run(body())
    assert dropped == 0, f"{dropped} of {cancelled} cancellations dropped"
    assert value == b"ok"


def test_cluster_clients_nodes_are_cancel_safe(redis_cluster_url: str) -> None:
    async def body() -> list[type]:
        client = redis_client(Settings(redis_url=redis_cluster_url, redis_cluster=True))
        try:
            await client.set("k", "v")
            return [node.connection_class for node in client.get_nodes()]
        finally:
            await client.aclose()

    classes = asyncio.run(body())
    assert len(classes) == 3 and all(issubclass(c, CancelSafeSend) for c in classes)
