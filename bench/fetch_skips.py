"""Does a fetch skip acknowledged records when several producers append to one partition?

``--producers`` aiokafka producers append record batches of 1-3 records to ONE partition of a
fresh embedded broker (Tansu), each awaiting every batch's acknowledgement (acks=all) before the
next, as phase one does with its fan-out; one aiokafka consumer follows the partition meanwhile.
Prints, per producer, the records acknowledged, received by the live consumer, missing and out
of its send order, the offset gaps the live consumer met, then what a consumer reading the
partition from the start gets. Kafka: nothing missing, no gap. Tansu (v0.6.0, measured): with
two producers a few records per 20,000 are skipped by the live consumer (its position passed a
batch that was acknowledged but not readable yet) while the partition holds them all.

Usage: python bench/fetch_skips.py [--seconds 15] [--producers 2]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer  # noqa: E402
from aiokafka.structs import TopicPartition  # noqa: E402

from stream.stack.broker import TansuBroker  # noqa: E402
from stream.pipeline.topics import ensure_topics  # noqa: E402

TOPIC = "fetch-skips"
PARTITION = TopicPartition(TOPIC, 0)
IDLE_POLLS = 10
"""Empty polls (200 ms each) after which a consumer that was told to stop stops."""


async def produce(bootstrap: str, name: str, sent: dict[str, int], stop: asyncio.Event) -> None:
    """Batches of 1-3 records ``name:n`` to the partition, each acknowledged before the next."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    n = 0
    try:
        while not stop.is_set():
            batch = producer.create_batch()
            for _ in range(1 + n % 3):
                batch.append(key=name.encode(), value=f"{name}:{n}".encode(), timestamp=None)
                n += 1
            await (await producer.send_batch(batch, TOPIC, partition=PARTITION.partition))
            sent[name] = n
    finally:
        await producer.stop()


async def consume(bootstrap: str, got: list[str], stop: asyncio.Event) -> int:
    """Read the partition from its start into ``got`` until ``stop`` and then idle; returns the
    offset gaps met (a record whose offset is not the previous one + 1)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=20)
    await consumer.start()
    consumer.assign([PARTITION])
    await consumer.seek_to_beginning(PARTITION)
    last, gaps, idle = None, 0, 0
    try:
        while not (stop.is_set() and idle >= IDLE_POLLS):
            records = (await consumer.getmany(PARTITION, timeout_ms=200)).get(PARTITION, [])
            idle = 0 if records else idle + 1
            for record in records:
                if last is not None and record.offset != last + 1:
                    gaps += 1
                    print(f"offset gap: after {last} came {record.offset}")
                last = record.offset
                assert record.value is not None
                got.append(record.value.decode())
    finally:
        await consumer.stop()
    return gaps


async def run(seconds: float, producers: int) -> None:
    broker = TansuBroker().start()
    try:
        ensure_topics(broker.bootstrap, {TOPIC: 4})
        names = [chr(ord("A") + i) for i in range(producers)]
        sent: dict[str, int] = {}
        got: list[str] = []
        stop = asyncio.Event()
        live = asyncio.create_task(consume(broker.bootstrap, got, stop))
        tasks = [asyncio.create_task(produce(broker.bootstrap, name, sent, stop)) for name in names]
        await asyncio.sleep(seconds)
        stop.set()
        await asyncio.gather(*tasks)
        gaps = await live
        print("| producer | acknowledged | received live | missing | out of order |\n|---|---:|---:|---:|---:|")
        for name in names:
            mine = [int(v.split(":")[1]) for v in got if v.startswith(name + ":")]
            missing = sorted(set(range(sent[name])) - set(mine))
            disorder = sum(1 for a, b in zip(mine, mine[1:]) if b <= a)
            print(f"| {name} | {sent[name]:,} | {len(mine):,} | {len(missing)} {missing[:6]} | {disorder} |")
        again: list[str] = []
        done = asyncio.Event()
        done.set()
        regaps = await consume(broker.bootstrap, again, done)
        expected = {f"{name}:{i}" for name in names for i in range(sent[name])}
        print(f"\nlive consumer: {gaps} offset gap(s); read again from the start: {len(again):,} records, "
              f"{regaps} offset gap(s), {len(expected - set(again))} missing")
    finally:
        broker.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--producers", type=int, default=2)
    args = parser.parse_args()
    asyncio.run(run(args.seconds, args.producers))


if __name__ == "__main__":
    main()
