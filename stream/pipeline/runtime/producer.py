"""The worker's Kafka producer (record batches per partition: Faust's ``Topic.send`` cost 1-2 ms per message),
keyed messages where Kafka's default partitioner puts the key; and the handlers' outbox over it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Sequence

import mode
from aiokafka import AIOKafkaProducer

from stream.connections import aiokafka_config
from stream.contracts import DeadLetter
from stream.pipeline import metrics, retry
from stream.pipeline.messages import FanOutMessage
from stream.pipeline.outbox import Outgoing, TopicNames, fanout_messages, letter_message
from stream.pipeline.partitioner import partition_for
from stream.settings import Settings

log = logging.getLogger(__name__)

BATCH_BYTES = 1024 * 1024
"""Largest record batch sent at once, per partition (a bigger single message gets a batch of its own); Faust's
own producer's too (its default is 16 KiB)."""
ACKS = "all"


class BatchProducer(mode.Service):
    """An aiokafka producer that sends messages grouped per partition, started with the worker."""

    def __init__(self, settings: Settings) -> None:
        super().__init__()
        self.settings = settings
        self.producer: AIOKafkaProducer | None = None
        self._partitions: dict[str, int] = {}

    async def on_start(self) -> None:
        self.producer = AIOKafkaProducer(**aiokafka_config(self.settings), acks=ACKS, max_batch_size=BATCH_BYTES,
                                         max_request_size=self.settings.max_message_bytes)
        await self.producer.start()

    async def on_stop(self) -> None:
        if self.producer is not None:
            await self.producer.stop()

    async def partition_count(self, topic: str) -> int:
        """``topic``'s partition count from the broker's metadata (read once per worker)."""
        if topic not in self._partitions:
            assert self.producer is not None
            self._partitions[topic] = len(await self.producer.partitions_for(topic))
        return self._partitions[topic]

    async def send(self, messages: Sequence[Outgoing]) -> None:
        """Send every message and wait until the broker has acknowledged them all."""
        await asyncio.gather(*await self.enqueue(messages))

    async def enqueue(self, messages: Sequence[Outgoing]) -> list[asyncio.Future[object]]:
        """Hand every message to the producer (sent in the background at once) and return the
        futures of their acknowledgements: a caller can go on working while they fly."""
        if not messages:
            return []
        assert self.producer is not None, "BatchProducer not started"
        groups: dict[tuple[str, int], list[Outgoing]] = defaultdict(list)
        counts = self._partitions  # read once per topic, not awaited per message
        for m in messages:
            partition = m.partition
            if partition is None:
                if not m.key:
                    partition = 0
                else:
                    count = counts.get(m.topic)
                    if count is None:
                        count = await self.partition_count(m.topic)
                    partition = partition_for(m.key.decode(), count)
            groups[(m.topic, partition)].append(m)
        pending = []
        for (topic, partition), group in groups.items():
            batch = self.producer.create_batch()
            for m in group:
                if batch.append(key=m.key, value=m.value, timestamp=None) is None:
                    if batch.record_count():
                        pending.append(await self.producer.send_batch(batch, topic, partition=partition))
                        batch = self.producer.create_batch()
                    if batch.append(key=m.key, value=m.value, timestamp=None) is None:  # larger than a batch
                        pending.append(await self.producer.send(topic, m.value, key=m.key, partition=partition))
                        batch = self.producer.create_batch()
            if batch.record_count():
                pending.append(await self.producer.send_batch(batch, topic, partition=partition))
        return pending


class WorkerOutbox:
    """The worker's :class:`~stream.pipeline.outbox.Outbox`: each send retried until the broker acknowledged it;
    :meth:`send` is the agents' :data:`~stream.pipeline.outbox.Send` too."""

    def __init__(self, producer: BatchProducer, names: TopicNames) -> None:
        self.producer, self.names, self.settings = producer, names, producer.settings

    async def send(self, messages: list[Outgoing], what: str) -> None:
        await retry.retrying(lambda: self.producer.send(messages), f"sending {what}",
                             max_delay_s=self.settings.retry_max_delay_s, handler=retry.SEND)

    async def resend(self, messages: list[FanOutMessage]) -> None:
        if messages:
            log.warning("re-driving %d stored fan-out message(s)", len(messages))
            await self.send(fanout_messages(self.names, messages), "re-driven fan-out")

    async def reject(self, letter: DeadLetter) -> None:
        metrics.ROUNDS_REJECTED.labels(letter.reason).inc()
        message = letter_message(self.names, self.settings.max_message_bytes, letter, None, None)
        await self.send([message], "dead letter")

    async def partition_count(self) -> int:
        return await self.producer.partition_count(self.names.player_updates)
