"""``compat._drain_messages`` (the consumer's fetch loop, see ``compat.direct_delivery``) when a
fetch skips offsets of a partition (the embedded Tansu broker does, with two producers appending
to one partition): the loop seeks back and fetches the missing records again, delivering every
record in offset order, instead of acknowledging the gap (its records then never reached a
stream: a lost ``player-updates`` message, its rounds and every later round of their players left
to the sweeper). A gap that stays (Kafka with transactions or compaction) is accepted after
``REFETCH_ATTEMPTS`` fetch loops. Only on the embedded broker (EMBEDDED_BROKER, set by the dev
stack): against any other broker a gap is Faust's to handle at once."""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

import faust
from faust.types import TP
from faust.types.tuples import Message

from stream.pipeline.runtime import compat

PARTITION = TP("player-updates", 0)


class FakeConsumer:
    """What ``_drain_messages`` uses of Faust's consumer: ``getmany`` answers one scripted fetch
    per loop (then stops the loop), the records delivered and the seeks are recorded."""

    def __init__(self, fetches: list[list[int]]) -> None:
        self.app = faust.App("refetch-test", broker="kafka://127.0.0.1:1", web_enabled=False)
        self.fetches = fetches
        self.delivered: list[int] = []
        self.seeks: list[int] = []
        self.gaps: list[tuple[int, int]] = []
        self._stopped = asyncio.Event()
        self.suspend_flow = asyncio.Event()
        self.flow_active = True
        self.should_stop = False
        self._read_offset: dict[TP, int | None] = defaultdict(lambda: None)
        self._commit_every = None
        self._n_acked = 0
        self.log = logging.getLogger("refetch-test")
        self.consumer_stopped_errors = ()
        self.diag = self
        self._thread = self
        self.aiokafka = self

    def set_flag(self, flag: Any) -> None:
        pass

    unset_flag = set_flag

    async def getmany(self, timeout: float) -> AsyncIterator[tuple[TP, Message]]:
        if not self.fetches:
            self._stopped.set()
            return
        for offset in self.fetches.pop(0):
            yield PARTITION, Message(PARTITION.topic, PARTITION.partition, offset, 0.0, 0, {}, b"k", b"v", None)

    async def callback(self, message: Message) -> None:
        self.delivered.append(message.offset)

    async def wait_first(self, *coros: Any) -> None:
        await coros[0]
        for coro in coros[1:]:
            coro.close()

    async def _add_gap(self, tp: TP, start: int, end: int) -> None:
        self.gaps.append((start, end))

    # the consumer thread and its aiokafka consumer
    def _ensure_consumer(self) -> FakeConsumer:
        return self

    async def call_thread(self, fn: Any, *args: Any) -> Any:
        return await fn(*args)

    def assignment(self) -> set[Any]:
        from aiokafka import TopicPartition
        return {TopicPartition(PARTITION.topic, PARTITION.partition)}

    def seek(self, tp: Any, offset: int) -> None:
        self.seeks.append(offset)


def drain(fetches: list[list[int]], *, refetch_attempts: int = compat.REFETCH_ATTEMPTS) -> FakeConsumer:
    """Run the fetch loop over ``fetches``; ``refetch_attempts`` is what ``direct_delivery`` sets
    (REFETCH_ATTEMPTS on the embedded broker, 0 on any other)."""
    consumer = FakeConsumer(fetches)
    consumer._ems_refetch_attempts = refetch_attempts
    fetcher = type("Fetcher", (), {"_stopped": asyncio.Event()})()
    asyncio.run(compat._drain_messages(consumer, fetcher))
    return consumer


def test_a_fetch_that_skips_offsets_is_fetched_again_from_the_first_missing_one() -> None:
    # the second fetch returns 9, 10 while 7, 8 (acknowledged to their producer) are not readable yet
    consumer = drain([[5, 6], [9, 10], [7, 8, 9, 10], [11]])
    assert consumer.delivered == [5, 6, 7, 8, 9, 10, 11]
    assert consumer.seeks == [7]  # once for the loop, not once per skipped record


def test_missing_records_that_stay_missing_are_fetched_again_then_skipped() -> None:
    skipping = [[9, 10]] * (compat.REFETCH_ATTEMPTS + 1)
    consumer = drain([[5, 6], *skipping, [11]])
    assert consumer.seeks == [7] * compat.REFETCH_ATTEMPTS
    assert consumer.delivered == [5, 6, 9, 10, 11]  # then Faust's handling of a gap, as before


def test_on_another_broker_a_gap_is_fausts_at_once() -> None:
    consumer = drain([[5, 6], [9, 10], [11]], refetch_attempts=0)
    assert consumer.seeks == []
    assert consumer.delivered == [5, 6, 9, 10, 11]


def test_the_refetch_is_installed_with_the_embedded_broker_only() -> None:
    from faust.transport.consumer import Consumer

    from stream.pipeline.runtime.app import create_app
    from stream.settings import Settings

    create_app(Settings.from_env({"EMBEDDED_BROKER": "false"}))
    assert Consumer._ems_refetch_attempts == 0
    create_app(Settings.from_env({"EMBEDDED_BROKER": "true"}))
    assert Consumer._ems_refetch_attempts == compat.REFETCH_ATTEMPTS
