"""When does the embedded broker answer a waiting fetch? (what CONSUMER_FETCH_MAX_WAIT_MS costs per hop)

An aiokafka consumer (``fetch_max_wait_ms`` = ``--wait-ms``) reads one partition of a fresh
embedded stack (Tansu). Its previous fetch has just returned, so a new one is waiting at the
broker; ``--gaps`` later a record is produced (acks=all) and the time from the send to the
record's arrival at the consumer is taken. A broker that answers a waiting fetch when data
arrives (Kafka) gives ~1 ms whatever the gap. Tansu (v0.6.0, measured) looks again only at half
the wait, then at 3/4, 7/8, ...: a record produced just after the fetch was sent arrives
~wait/2 later; an empty fetch is answered at its deadline.

Usage: python bench/fetch_wait.py [--wait-ms 20,400] [--gaps 0,0.25,0.5,0.75] [--records 20]
(gaps as fractions of the wait). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from stream.stack.local import LocalStack  # noqa: E402

TOPIC = "fetch-wait"


async def arrival_ms(bootstrap: str, wait_ms: int, gap_s: float, records: int) -> list[float]:
    """Send -> consumed of ``records`` records, each produced ``gap_s`` after the previous one was consumed."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    tp = TopicPartition(TOPIC, 0)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, fetch_max_wait_ms=wait_ms, enable_auto_commit=False)
    await producer.start()
    await consumer.start()
    try:
        consumer.assign([tp])
        await consumer.seek_to_end(tp)
        out = []
        for _ in range(records):
            await asyncio.sleep(gap_s)
            sent = time.perf_counter()
            await (await producer.send(TOPIC, b"x" * 100, partition=0))
            while not (await consumer.getmany(tp, timeout_ms=10_000)).get(tp):
                pass
            out.append((time.perf_counter() - sent) * 1000)
        return out
    finally:
        await consumer.stop()
        await producer.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wait-ms", default="20,400", help="fetch_max_wait_ms values, comma-separated")
    parser.add_argument("--gaps", default="0,0.25,0.5,0.75", help="produce delays as fractions of the wait")
    parser.add_argument("--records", type=int, default=20, help="records per (wait, gap)")
    args = parser.parse_args()
    waits = [int(w) for w in args.wait_ms.split(",")]
    gaps = [float(g) for g in args.gaps.split(",")]
    from kafka.admin import KafkaAdminClient, NewTopic

    print("| fetch_max_wait_ms | record produced after (share of the wait) | send -> consumed p50 | max |")
    print("|---:|---:|---:|---:|")
    with LocalStack.on_ports() as stack:
        admin = KafkaAdminClient(bootstrap_servers=stack.bootstrap)
        admin.create_topics([NewTopic(TOPIC, 1, 1)])
        admin.close()
        for wait_ms in waits:
            for gap in gaps:
                ms = sorted(asyncio.run(arrival_ms(stack.bootstrap, wait_ms, wait_ms * gap / 1000, args.records)))
                print(f"| {wait_ms} | {gap:.2f} | {ms[len(ms) // 2]:.1f} ms | {ms[-1]:.1f} ms |")


if __name__ == "__main__":
    main()
