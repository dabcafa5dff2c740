"""``compat._deliver`` (eager delivery of a fetched message): the conductor's callback runs in
place when it does not wait; when it waits, the rest of it runs as a task raced against the
consumer's flow suspension (what Faust's ``_drain_messages`` does for every message), and a
suspension cancels it there; exceptions propagate either way."""

from __future__ import annotations

import asyncio
from typing import Any

import mode
import pytest

from stream.pipeline.compat import _deliver


class FakeConsumer(mode.Service):
    """A service with Faust's consumer's ``suspend_flow`` event (``wait_first`` is mode's)."""

    def __init__(self) -> None:
        super().__init__()
        self.suspend_flow = mode.utils.locks.Event()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_callback_that_does_not_wait_runs_in_place() -> None:
    async def main() -> list[str]:
        consumer = FakeConsumer()
        seen: list[str] = []

        async def callback(message: str) -> None:
            seen.append(message)

        tasks_before = len(asyncio.all_tasks())
        await _deliver(consumer, callback, "m")
        assert len(asyncio.all_tasks()) == tasks_before
        return seen

    assert run(main()) == ["m"]


def test_a_callback_that_waits_is_finished_with_its_result_and_exception() -> None:
    async def main() -> list[Any]:
        consumer = FakeConsumer()
        await consumer.start()
        gate: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        seen: list[Any] = []

        async def callback(message: str) -> None:
            await asyncio.sleep(0)  # a bare yield
            seen.append(await gate)  # a future
            seen.append(message)

        asyncio.get_running_loop().call_later(0.01, gate.set_result, "opened")
        await _deliver(consumer, callback, "m")

        async def failing(message: str) -> None:
            await asyncio.sleep(0.001)
            raise ValueError(message)

        with pytest.raises(ValueError, match="boom"):
            await _deliver(consumer, failing, "boom")
        await consumer.stop()
        return seen

    assert run(main()) == ["opened", "m"]


def test_a_synchronous_exception_propagates() -> None:
    async def main() -> None:
        async def failing(message: str) -> None:
            raise KeyError(message)

        await _deliver(FakeConsumer(), failing, "k")

    with pytest.raises(KeyError):
        run(main())


def test_a_flow_suspension_cancels_a_waiting_callback() -> None:
    async def main() -> list[str]:
        consumer = FakeConsumer()
        await consumer.start()
        seen: list[str] = []

        async def callback(message: str) -> None:
            try:
                await asyncio.Event().wait()  # a full stream buffer, never drained
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise

        asyncio.get_running_loop().call_later(0.01, consumer.suspend_flow.set)
        await _deliver(consumer, callback, "m")
        await asyncio.sleep(0.01)
        await consumer.stop()
        return seen

    assert run(main()) == ["cancelled"]
