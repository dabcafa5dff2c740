"""The embedded broker's cost per message as its log grows (why throughput falls past the ceiling).

Sends acknowledged produce requests (``--per-request`` messages of 300 bytes with distinct keys,
awaited, as the workers send a small round's events) to one 4-partition topic of a fresh embedded
Tansu broker and reads them back, in chunks of ``--chunk`` messages; per chunk it prints the rate,
the broker's CPU per message and the record batches it stores per partition (each request leaves
one batch per partition its keys hash to) against the log's size, and the latency of one hop
(``--probes`` single messages, one every few milliseconds, from the producer's send to the
consumer's ``getmany``, the consumer waiting ``CONSUMER_FETCH_MAX_WAIT_MS``' default 10 ms per
fetch as the workers do). The first chunk is the reference: a broker whose cost does not depend
on the log would show flat figures.

Several ``--per-request`` values (``5,100``) are measured one after the other, each on a fresh
broker, in the same run: the broker's memory storage lists every stored batch of a partition on
each fetch that returns data, so its cost grows with the batches stored, not the messages, and
fewer, larger batches keep it flat for longer (BENCHMARKS.md, Soak).

Usage: python bench/broker_growth.py [--chunks 10] [--chunk 10000] [--per-request 5[,100]] [--probes 100]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from kafka.partitioner.default import murmur2

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from stream.stack.local import LocalStack  # noqa: E402
from stream.pipeline.topics import ensure_topics  # noqa: E402

TOPIC = "growth"
PARTITIONS = 4
VALUE = b"x" * 300
READ_TIMEOUT_S = 120.0
FETCH_MAX_WAIT_MS = 10
"""The consumer's fetch wait: the workers' default (``CONSUMER_FETCH_MAX_WAIT_MS``)."""
PROBE_GAP_S = 0.002
"""Pause between two hop probes (each probe is a request and a batch of its own)."""
PROBE = b"t:"


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def partition_of(key: bytes) -> int:
    """The partition the producer's default partitioner gives ``key`` (murmur2, as Kafka's)."""
    return int(murmur2(key) & 0x7FFFFFFF) % PARTITIONS


Row = tuple[int, float, float, int, list[float]]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


async def hop_latency(producer: AIOKafkaProducer, consumer: AIOKafkaConsumer, probes: int) -> list[float]:
    """Seconds from the send of each of ``probes`` messages (paced, each its own request) until the
    consumer got it."""
    seen: list[float] = []

    async def read() -> None:
        while len(seen) < probes:
            records = await consumer.getmany(timeout_ms=200)
            now = time.time()
            seen.extend(now - float(r.value[len(PROBE):]) for batch in records.values() for r in batch
                        if r.value is not None and r.value.startswith(PROBE))

    reader = asyncio.ensure_future(read())
    for i in range(probes):
        await producer.send(TOPIC, PROBE + b"%.6f" % time.time(), key=b"probe%d" % i)
        await asyncio.sleep(PROBE_GAP_S)
    await asyncio.wait_for(reader, READ_TIMEOUT_S)
    return seen


async def run(stack: LocalStack, chunks: int, chunk: int, per_request: int, probes: int) -> list[Row]:
    """Per chunk: log size after it, messages/s, broker CPU µs per message, batches stored per
    partition, then the hop latencies (seconds) of ``probes`` messages."""
    assert stack.broker.process is not None
    pid = stack.broker.process.pid
    producer = AIOKafkaProducer(bootstrap_servers=stack.bootstrap, acks="all")
    consumer = AIOKafkaConsumer(TOPIC, bootstrap_servers=stack.bootstrap, auto_offset_reset="earliest",
                                group_id=None, fetch_max_wait_ms=FETCH_MAX_WAIT_MS)
    await producer.start()
    await consumer.start()
    out = []
    batches = 0
    try:
        for index in range(chunks):
            started, cpu = time.perf_counter(), process_cpu_s(pid)
            for request in range(chunk // per_request):
                request_keys = [b"k%d" % (request * per_request + i) for i in range(per_request)]
                sends = [await producer.send(TOPIC, VALUE, key=key) for key in request_keys]
                await asyncio.gather(*sends)
                batches += len({partition_of(key) for key in request_keys})
            got, deadline = 0, time.monotonic() + READ_TIMEOUT_S
            while got < chunk // per_request * per_request:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"read {got} messages of chunk {index}")
                records = await consumer.getmany(timeout_ms=200, max_records=100_000)
                got += sum(len(batch) for batch in records.values())
            elapsed = time.perf_counter() - started
            cpu_us = (process_cpu_s(pid) - cpu) / got * 1e6
            hops = await hop_latency(producer, consumer, probes) if probes else []
            batches += probes
            out.append(((index + 1) * got, got / elapsed, cpu_us, batches // PARTITIONS, hops))
            print(f"chunk {index + 1}/{chunks} done", file=sys.stderr)
    finally:
        await producer.stop()
        await consumer.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=10)
    parser.add_argument("--chunk", type=int, default=10_000, help="messages per chunk")
    parser.add_argument("--per-request", default="5",
                        help="messages per awaited produce request; several (5,100): one fresh broker each")
    parser.add_argument("--probes", type=int, default=100, help="hop latency probes after each chunk (0: none)")
    args = parser.parse_args()
    for per_request in (int(n) for n in args.per_request.split(",")):
        with LocalStack() as stack:
            ensure_topics(stack.bootstrap, {TOPIC: PARTITIONS})
            rows = asyncio.run(run(stack, args.chunks, args.chunk, per_request, args.probes))
        first_rate, first_cpu = rows[0][1], rows[0][2]
        load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"\n{per_request} message(s) per request, load average {load}\n")
        print("| log size (messages) | batches per partition | messages/s | broker CPU µs/message "
              "| CPU vs first chunk | hop latency p50 ms | p90 ms |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for size, rate, cpu, batches, hops in rows:
            ratio = f"{cpu / first_cpu:.1f}x" if first_cpu else "n/a"  # no CPU tick yet in a tiny first chunk
            hop = (f"{percentile(hops, 0.5) * 1e3:.1f} | {percentile(hops, 0.9) * 1e3:.1f}" if hops else "- | -")
            print(f"| {size:,} | {batches:,} | {rate:,.0f} | {cpu:.0f} | {ratio} | {hop} |")
        print(f"\nlast chunk: {rows[-1][1] / first_rate:.2f}x the first chunk's rate")


if __name__ == "__main__":
    main()
