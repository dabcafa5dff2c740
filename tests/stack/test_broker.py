"""Smoke test of the embedded broker: kafka-python, aiokafka and Faust against Tansu (or real Kafka)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from stream.stack.broker import TansuBroker
from stream.stack.local import LocalStack
from stream.pipeline.topics import ensure_topics

pytestmark = pytest.mark.integration

PARTITIONS = 4
MESSAGES = 40
#: Generous bound on consumer-group joins against Tansu (a JoinGroup waits ~ session timeout / 2).
CONSUME_DEADLINE_S = 60.0
FAUST_APP = Path(__file__).with_name("faust_smoke_app.py")


def _keys(n: int) -> list[bytes]:
    return [f"player-{i}".encode() for i in range(n)]


def _kafka_python_partition(key: bytes, partitions: int) -> int:
    """kafka-python's default partitioner (Java client's murmur2, positive, modulo partitions)."""
    from kafka.partitioner.default import murmur2

    return (murmur2(key) & 0x7FFFFFFF) % partitions


def test_broker_starts_answers_and_stops() -> None:
    broker = TansuBroker().start()
    try:
        assert broker.alive()
        assert ensure_topics(broker.bootstrap, {"a": 2}) == {"a": 2}
    finally:
        broker.close()
    assert not broker.alive()


def test_local_stack_context_manager_gives_both_services() -> None:
    with LocalStack() as stack:
        assert stack.env() == {"KAFKA_BOOTSTRAP": stack.bootstrap, "REDIS_URL": stack.redis_url,
                               "LEAVE_GROUP_ON_STOP": "false", "EMBEDDED_BROKER": "true"}
        assert redis.Redis.from_url(stack.redis_url).ping()
        assert ensure_topics(stack.bootstrap, {"x": 1}) == {"x": 1}
    assert stack.broker.process is None and stack.redis.process is None


def test_ensure_topics_tolerates_existing(local_stack, fresh_prefix: str) -> None:
    name = f"{fresh_prefix}rounds"
    assert ensure_topics(local_stack.bootstrap, {name: PARTITIONS}) == {name: PARTITIONS}
    # Again, with a different partition count: the existing topic is left as it is.
    assert ensure_topics(local_stack.bootstrap, {name: 1, f"{fresh_prefix}other": 2}) == {name: PARTITIONS, f"{fresh_prefix}other": 2}


def test_kafka_python_round_trip_and_partitioner_agreement(local_stack, fresh_prefix: str) -> None:
    """kafka-python produces keyed messages; they land on murmur2(key) % partitions and come back intact."""
    from aiokafka.partitioner import DefaultPartitioner as AioPartitioner
    from kafka import KafkaConsumer, KafkaProducer

    topic = f"{fresh_prefix}kp"
    ensure_topics(local_stack.bootstrap, {topic: PARTITIONS})
    producer = KafkaProducer(bootstrap_servers=local_stack.bootstrap, acks="all")
    partitions = list(range(PARTITIONS))
    landed: dict[bytes, int] = {}
    for key in _keys(MESSAGES):
        meta = producer.send(topic, key=key, value=b"v-" + key).get(timeout=30)
        landed[key] = meta.partition
        assert meta.partition == _kafka_python_partition(key, PARTITIONS)
        assert meta.partition == AioPartitioner()(key, partitions, partitions)
    producer.close()
    assert len(set(landed.values())) == PARTITIONS  # 40 keys spread over all 4 partitions

    consumer = KafkaConsumer(topic, bootstrap_servers=local_stack.bootstrap, group_id=f"{fresh_prefix}g",
                             auto_offset_reset="earliest", session_timeout_ms=6000, heartbeat_interval_ms=1000,
                             consumer_timeout_ms=1000)
    seen: dict[bytes, tuple[bytes, int]] = {}
    deadline = time.monotonic() + CONSUME_DEADLINE_S
    while len(seen) < MESSAGES and time.monotonic() < deadline:
        for record in consumer:
            seen[record.key] = (record.value, record.partition)
    consumer.close()
    assert seen == {key: (b"v-" + key, landed[key]) for key in _keys(MESSAGES)}


def test_aiokafka_round_trip_same_partitions_as_kafka_python(local_stack, fresh_prefix: str) -> None:
    """aiokafka's default partitioner puts each key where kafka-python's would."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    topic = f"{fresh_prefix}aio"
    ensure_topics(local_stack.bootstrap, {topic: PARTITIONS})

    async def run() -> tuple[dict[bytes, int], dict[bytes, tuple[bytes, int]]]:
        producer = AIOKafkaProducer(bootstrap_servers=local_stack.bootstrap, acks="all")
        await producer.start()
        landed: dict[bytes, int] = {}
        try:
            for key in _keys(MESSAGES):
                meta = await producer.send_and_wait(topic, key=key, value=b"a-" + key)
                landed[key] = meta.partition
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=local_stack.bootstrap, group_id=f"{fresh_prefix}g",
                                    auto_offset_reset="earliest", session_timeout_ms=6000, heartbeat_interval_ms=1000)
        await consumer.start()
        seen: dict[bytes, tuple[bytes, int]] = {}
        try:
            deadline = time.monotonic() + CONSUME_DEADLINE_S
            while len(seen) < MESSAGES and time.monotonic() < deadline:
                batch = await consumer.getmany(timeout_ms=1000)
                for records in batch.values():
                    for record in records:
                        seen[record.key] = (record.value, record.partition)
        finally:
            await consumer.stop()
        return landed, seen

    landed, seen = asyncio.run(run())
    assert landed == {key: _kafka_python_partition(key, PARTITIONS) for key in _keys(MESSAGES)}
    assert seen == {key: (b"a-" + key, landed[key]) for key in _keys(MESSAGES)}


def test_faust_worker_subprocess_consumes_into_redis(local_stack, stack_redis_url: str, fresh_prefix: str,
                                                      tmp_path: Path) -> None:
    """A minimal Faust app, run as ``worker`` in a subprocess, copies a topic into Redis."""
    from kafka import KafkaProducer

    topic, app_id = f"{fresh_prefix}faust-in", f"{fresh_prefix}app"
    ensure_topics(local_stack.bootstrap, {topic: PARTITIONS})
    producer = KafkaProducer(bootstrap_servers=local_stack.bootstrap, acks="all")
    for key in _keys(MESSAGES):
        producer.send(topic, key=key, value=b"f-" + key)
    producer.flush()
    producer.close()

    log = tmp_path / "worker.log"
    with open(log, "wb") as out:
        worker = subprocess.Popen([sys.executable, str(FAUST_APP), local_stack.bootstrap, stack_redis_url, app_id,
                                   topic, str(tmp_path / "data")], stdout=out, stderr=subprocess.STDOUT)
    client = redis.Redis.from_url(stack_redis_url)
    try:
        deadline = time.monotonic() + CONSUME_DEADLINE_S
        while client.hlen(f"smoke:{app_id}") < MESSAGES and time.monotonic() < deadline and worker.poll() is None:
            time.sleep(0.2)
        stored = client.hgetall(f"smoke:{app_id}")
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
        client.close()
    assert stored == {key: b"f-" + key for key in _keys(MESSAGES)}, log.read_text()[-3000:]
