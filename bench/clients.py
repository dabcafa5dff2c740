"""The benches' own Kafka clients: a producer of rounds and a reader of ``rating-changes``, in C.

The benches run on the same 2 cores as the pipeline they measure, so their clients' CPU is taken
from the workers, Redis and the broker. kafka-python (pure Python) cost ~66 µs of the bench's
process CPU per duel participation (publishing the rounds, reading every event back): more than
the broker. librdkafka (``confluent_kafka``, a test dependency) does the same for a fraction of
it, as a studio's producers and dashboards would run on machines of their own.

Rounds go to the partition the service's partitioner gives their ladder (``partition_for``:
Kafka's murmur2 of the key, as a keyed Java or kafka-python producer does; librdkafka's default
partitioner is another hash), so phase one never forwards a bench round.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

from stream.pipeline.partitioner import partition_for

LINGER_MS = 5
"""The producer's linger: a burst goes out in batches."""
QUEUE_MESSAGES = 1_000_000
"""Messages librdkafka may hold before ``produce`` raises BufferError (then the bench polls)."""
READ_BATCH = 10_000
"""Events taken per ``consume`` call."""
METADATA_TIMEOUT_S = 30.0


def _partitions(client: Producer | Consumer, topic: str) -> int:
    """``topic``'s partition count, waiting for the broker to know the topic."""
    deadline = time.monotonic() + METADATA_TIMEOUT_S
    while True:
        found = client.list_topics(topic, timeout=5).topics.get(topic)
        if found is not None and found.error is None and found.partitions:
            return len(found.partitions)
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {topic} has no partitions after {METADATA_TIMEOUT_S:.0f} s")
        time.sleep(0.05)


class RoundProducer:
    """Publishes encoded rounds to ``topic``, keyed by ladder, on the service's partition of it."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": LINGER_MS,
                                  "queue.buffering.max.messages": QUEUE_MESSAGES,
                                  "message.max.bytes": 64 * 1024 * 1024})
        self.partitions = _partitions(self.producer, topic)

    def send(self, ladder: str, value: bytes) -> None:
        while True:
            try:
                self.producer.produce(self.topic, value, ladder.encode(), partition_for(ladder, self.partitions))
                break
            except BufferError:  # the local queue is full: let librdkafka send some
                self.producer.poll(0.01)
        self.producer.poll(0)  # delivery callbacks (none) and errors

    def flush(self) -> None:
        left = self.producer.flush(60)
        if left:
            raise TimeoutError(f"{left} round(s) not delivered to {self.topic}")

    def close(self) -> None:
        self.flush()


class EventReader:
    """Reads ``topic`` from its start for the whole bench, counting events: one consumer, so a run's
    reader starts where the previous one stopped. Partitions are assigned, not joined as a group
    (the embedded broker answers a JoinGroup only after seconds)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-bench-reader",
                                  "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                                  "max.partition.fetch.bytes": 16 * 1024 * 1024})
        count = _partitions(self.consumer, topic)
        self.consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(count)])
        self.seen = 0
        self.last_arrival = 0.0

    def read_until(self, total: int, timeout_s: float) -> None:
        """Poll until ``total`` events were read since the start; ``last_arrival``: wall time of the last."""
        deadline = time.monotonic() + timeout_s
        while self.seen < total:
            if time.monotonic() > deadline:
                raise TimeoutError(f"read {self.seen} of {total} rating-change events")
            messages: Sequence = self.consumer.consume(READ_BATCH, timeout=0.2)
            for m in messages:
                if m.error() is not None and not m.error().retriable():
                    raise KafkaException(m.error())
            read = sum(1 for m in messages if m.error() is None)
            if read:
                self.seen += read
                self.last_arrival = time.time()

    def close(self) -> None:
        self.consumer.close()
