"""``compat.take_batches`` on a Faust stream in process: an event is acknowledged only once the
batch that held it was handled (its consumer asked for the next batch); an event of an earlier
consumer generation, or taken while flow control is suspended (a rebalance), is dropped and
never acknowledged: Faust's own stream iterator acks such skipped events, which let a commit pass
offsets nobody handled (rounds lost after a rebalance)."""

from __future__ import annotations

import asyncio
from typing import Any

import faust
import pytest
from faust.types.tuples import Message

from stream.pipeline.runtime.compat import take_batches

GENERATION = 7


class Spy:
    """A Faust app and a stream over one of its channels, with the stream's acks recorded."""

    def __init__(self) -> None:
        self.app = faust.App("take-batches-test", broker="kafka://127.0.0.1:1", web_enabled=False)
        self.app.consumer_generation_id = GENERATION
        self.app.flow_control.resume()
        self.stream = self.app.stream(self.app.channel())
        self.acked: list[int] = []

        async def ack(event: Any) -> bool:
            self.acked.append(event.message.offset)
            return True

        self.stream.ack = ack  # type: ignore[method-assign]

    def put(self, offset: int, generation: int = GENERATION) -> None:
        message = Message("rounds", 0, offset, 0.0, 0, {}, b"k", b"v%d" % offset, None, generation_id=generation)
        event = self.app.create_event(b"k", message.value, {}, message)
        self.stream.channel.queue.force_put_nowait(event)


def offsets(batch: list[Any]) -> list[int]:
    return [event.message.offset for event in batch]


def test_only_handled_events_are_acked_never_skipped_ones() -> None:
    async def scenario() -> None:
        spy = Spy()
        batches = take_batches(spy.stream, 10, 0.01)
        spy.put(0)
        spy.put(1, generation=GENERATION - 1)  # fetched before the last rebalance
        spy.put(2)
        first = await batches.__anext__()
        assert offsets(first) == [0, 2]
        assert spy.acked == []  # not before the batch was handled
        following = asyncio.ensure_future(batches.__anext__())
        await asyncio.sleep(0.05)
        assert spy.acked == [0, 2]
        spy.app.flow_control.suspend()  # a rebalance: what is taken now is dropped
        spy.put(3)
        await asyncio.sleep(0.05)
        assert not following.done()
        spy.app.flow_control.resume()
        spy.put(4)
        assert offsets(await asyncio.wait_for(following, 1.0)) == [4]
        assert spy.acked == [0, 2]
        last = asyncio.ensure_future(batches.__anext__())
        await asyncio.sleep(0.01)
        assert spy.acked == [0, 2, 4]  # 1 (stale generation) and 3 (suspended flow): never acked
        last.cancel()
        await asyncio.gather(last, return_exceptions=True)

    asyncio.run(scenario())


def test_a_batch_gathered_across_a_rebalance_is_dropped_unacked() -> None:
    async def scenario() -> None:
        spy = Spy()
        batches = take_batches(spy.stream, 10, 0.2)
        gathering = asyncio.ensure_future(batches.__anext__())
        spy.put(0)
        await asyncio.sleep(0.05)  # taken, the batch still filling
        spy.app.flow_control.suspend()  # a rebalance: a new generation, the same records again
        spy.app.consumer_generation_id = GENERATION + 1
        await asyncio.sleep(0.05)
        spy.app.flow_control.resume()
        spy.put(0, generation=GENERATION + 1)
        assert offsets(await asyncio.wait_for(gathering, 2.0)) == [0]
        assert gathering.result()[0].message.generation_id == GENERATION + 1
        assert spy.acked == []
        await batches.aclose()

    asyncio.run(scenario())


def test_a_batch_whose_consumer_raised_is_not_acked() -> None:
    async def scenario() -> None:
        spy = Spy()
        spy.put(0)
        spy.put(1)
        with pytest.raises(RuntimeError, match="handler failed"):
            async for batch in take_batches(spy.stream, 10, 0.0):
                assert offsets(batch) == [0, 1]
                raise RuntimeError("handler failed")
        await spy.stream.stop()  # closes the generator (Faust's stream stop does)
        assert spy.acked == []

    asyncio.run(scenario())
