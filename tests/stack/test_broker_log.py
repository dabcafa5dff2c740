"""What the embedded broker (Tansu, memory storage) does with requests to shorten its log.

Its cost per fetch grows with the record batches a partition stores (bench/broker_growth.py), so
trimming consumed ``player-updates`` and old ``rating-changes`` would bound it. Neither way works
on this broker (stream/stack/README.md): these tests pin that down, so a Tansu that starts
honouring them fails here and the trim can be applied then.
"""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic, RecordsToDelete
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import KafkaError

from stream.stack.broker import TansuBroker

pytestmark = pytest.mark.integration

MESSAGES = 30
RETENTION = {"cleanup.policy": "delete", "retention.ms": "1", "retention.bytes": "1"}


async def _produce(bootstrap: str, topic: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for i in range(MESSAGES):
            await producer.send_and_wait(topic, b"x" * 100, key=b"k%d" % i, partition=0)
    finally:
        await producer.stop()


async def _read_from_start(bootstrap: str, topic: str) -> int:
    """Messages of partition 0 readable from its beginning."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, auto_offset_reset="earliest")
    await consumer.start()
    try:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        await consumer.seek_to_beginning(partition)
        got = 0
        for _ in range(20):
            batches = await consumer.getmany(partition, timeout_ms=250)
            got += sum(len(records) for records in batches.values())
            if got >= MESSAGES:
                break
        return got
    finally:
        await consumer.stop()


def test_delete_records_is_refused_and_deletes_nothing() -> None:
    async def scenario(bootstrap: str) -> tuple[BaseException | None, int]:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
        await admin.start()
        try:
            await admin.create_topics([NewTopic("trimmed", 1, 1)])
            await _produce(bootstrap, "trimmed")
            error: BaseException | None = None
            try:
                await admin.delete_records({TopicPartition("trimmed", 0): RecordsToDelete(MESSAGES - 5)},
                                           timeout_ms=5000)
            except KafkaError as exc:  # the broker drops the connection (its DeleteRecords is unimplemented)
                error = exc
            return error, await _read_from_start(bootstrap, "trimmed")
        finally:
            await admin.close()

    with TansuBroker() as broker:
        error, readable = asyncio.run(scenario(broker.bootstrap))
        assert broker.alive()
    assert error is not None, "DeleteRecords succeeded: trim consumed player-updates in the embedded stack"
    assert readable == MESSAGES


def test_retention_configs_are_stored_but_the_log_is_kept() -> None:
    async def scenario(bootstrap: str) -> tuple[dict[str, str], int]:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
        await admin.start()
        try:
            await admin.create_topics([NewTopic("retained", 1, 1, topic_configs=RETENTION)])
            await _produce(bootstrap, "retained")
            await asyncio.sleep(1.0)  # 1,000x retention.ms
            [described] = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "retained")])
            [resource] = described.resources
            configs = {entry[0]: entry[1] for entry in resource[4]}
            return configs, await _read_from_start(bootstrap, "retained")
        finally:
            await admin.close()

    with TansuBroker() as broker:
        configs, readable = asyncio.run(scenario(broker.bootstrap))
    assert {name: configs.get(name) for name in RETENTION} == RETENTION
    # A Kafka broker would drop these within its log.retention.check.interval; this one keeps them
    # (its memory storage has no retention: maintenance runs every 10 minutes and skips it).
    assert readable == MESSAGES
