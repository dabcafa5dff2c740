"""Test helpers: read back what a topic holds, straight from the broker (no consumer group)."""

from __future__ import annotations

import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

#: Seconds to wait for records to show up.
READ_DEADLINE_S = 30.0


def read_topic(bootstrap: str, topic: str, expected: int, deadline_s: float = READ_DEADLINE_S) -> list:
    """Every record of ``topic`` from the beginning, until ``expected`` arrived (or the deadline)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                             allow_auto_create_topics=False)
    try:
        partitions = consumer.partitions_for_topic(topic) or set()
        if not partitions:
            return []
        assigned = [TopicPartition(topic, p) for p in sorted(partitions)]
        consumer.assign(assigned)
        consumer.seek_to_beginning(*assigned)
        records: list = []
        deadline = time.monotonic() + deadline_s
        while len(records) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
        return records
    finally:
        consumer.close()


def topic_exists(bootstrap: str, topic: str) -> bool:
    """Whether the broker knows ``topic`` (asked without auto-creating it)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, allow_auto_create_topics=False)
    try:
        return topic in consumer.topics()
    finally:
        consumer.close()


def produce(bootstrap: str, topic: str, items: list[tuple[bytes | None, bytes]]) -> None:
    """Produce (key, value) pairs with acks=all and wait for every acknowledgement."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for key, value in items:
            producer.send(topic, key=key, value=value).get(timeout=READ_DEADLINE_S)
    finally:
        producer.close()
