"""The floor: what the I/O the contract mandates costs alone, next to the in-process replay.

Issue 3 aims at "end to end within 2x of the in-process engine". Whatever the implementation,
each participation must put one ``RatingChange`` event on Kafka (read back by a subscriber), each
round must cross Kafka twice (``rounds`` in, its fan-out on ``player-updates``), and each
participation must write the player's state, history entry, leaderboard score and round result to
Redis. This bench moves exactly those bytes with no processing of ours (pre-encoded, realistic
sizes) on the same embedded stack as bench/pipeline.py (Tansu broker + redis-server), for the
same rounds, and times ``stream.batch.replay`` of them in the same run:

* **Kafka floor**: every mandated message produced with aiokafka (the client Faust uses; acks as
  the service, linger 5 ms, 1 MiB batches: generous batching) and consumed back with aiokafka
  ``getmany``; wall time from the first send to the last message read, plus the broker's and this
  process's CPU. The pipeline's ordering (fan-out after the round, events after the fan-out) is
  ignored: a lower bound.
* **Kafka floor, C client** (when ``confluent_kafka`` is installed: ``pip install confluent-kafka``):
  the same messages through librdkafka, to show how much of the Kafka floor is aiokafka's Python.
  The service cannot use it as is (Faust speaks aiokafka), but a producer of events could.
* **Redis floor**: the mandated writes as plain commands in pipelines of ~1,000 players (no reads,
  no Lua, no idempotency checks), packed by hiredis; redis-server's CPU (INFO) is the part no
  client can remove; wall time and client CPU are shown too.
* **floor**: max(Kafka wall, Redis server CPU) per participation (the two can overlap on 2 cores),
  and its ratio to replay: above 2 means no implementation on this stack and machine can be within
  2x of replay. **Redis server CPU / replay** alone is the bound no Kafka client can lower.

The rounds are bench/workloads.py's (those of bench/pipeline.py, which also measures this floor
for its own rounds in its own run, next to the pipeline's figures).

Usage: python bench/floor.py [--sizes 2,10,1000,10000] [--repeat 1] [--rounds N]
Prints Markdown tables (BENCHMARKS.md, Pipeline, "Floor").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import redis
import redis.asyncio as aioredis
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from redis_stats import redis_cpu_s  # noqa: E402
from workloads import default_rounds, make_rounds  # noqa: E402

from stream.batch.replay import replay  # noqa: E402
from stream.contracts import RatingChange, RoundResult  # noqa: E402
from stream.engine import preset, warm_up  # noqa: E402
from stream.pipeline.partitioner import partitions_of  # noqa: E402
from stream.pipeline.runtime.producer import ACKS, BATCH_BYTES  # noqa: E402
from stream.settings import Settings  # noqa: E402
from stream.stack.local import LocalStack  # noqa: E402
from stream.pipeline.topics import ensure_topics  # noqa: E402
from stream.store import keys  # noqa: E402
from stream.store.packing import use_hiredis_packing  # noqa: E402

PARTITIONS = 4
LINGER_MS = 5
PLAYERS_PER_PIPELINE = 1_000
HISTORY_LENGTH = 100
STATE_BYTES = 200
"""Size of a packed engine state (a player's compressed factor history: tens of factors)."""
CONSUME_TIMEOUT_S = 300.0


@dataclass
class Messages:
    """The pre-encoded Kafka traffic of a set of rounds: (topic, key, value) triples."""

    rounds: list[tuple[bytes, bytes]]
    fanouts: list[tuple[bytes, bytes]]
    events: list[tuple[bytes, bytes]]

    @property
    def count(self) -> int:
        return len(self.rounds) + len(self.fanouts) + len(self.events)


@dataclass
class Floor:
    size: int
    rounds: int
    participations: int
    messages: int
    replay_s: float
    kafka_s: float
    kafka_client_cpu_s: float
    broker_cpu_s: float
    c_kafka_s: float
    """The Kafka floor through librdkafka (NaN when confluent_kafka is not installed)."""
    redis_s: float
    redis_server_cpu_s: float
    redis_client_cpu_s: float

    def per_part(self, seconds: float) -> float:
        return seconds / self.participations * 1e6

    @property
    def floor_s(self) -> float:
        return max(self.kafka_s, self.redis_server_cpu_s)


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def change(r: RoundResult, player: str, rank: int, rng: np.random.Generator) -> RatingChange:
    """A RatingChange of realistic size (full-precision floats, as the service emits)."""
    mu, sigma = rng.normal(1500.0, 300.0), rng.uniform(80.0, 350.0)
    return RatingChange(ladder=r.ladder, round_id=r.round_id, player=player, rank=rank, field_size=r.field_size,
                        performance=mu + rng.normal(0.0, 200.0), mu_before=mu, sigma_before=sigma,
                        mu_after=mu + rng.normal(0.0, 20.0), sigma_after=sigma * 0.97,
                        display_rating=mu - 2.0 * sigma, tier=None, rounds_played=int(rng.integers(1, 100)),
                        occurred_at=r.occurred_at)


def encode(rounds: list[RoundResult]) -> Messages:
    """Every message the contract makes the service move for ``rounds``, encoded before timing.

    A fan-out message carries its partition's players with their performance and rank (the
    shape of the service's PlayerUpdate batch)."""
    rng = np.random.default_rng(0)
    out = Messages([], [], [])
    for r in rounds:
        out.rounds.append((r.ladder.encode(), r.to_json().encode()))
        players = [s.player for s in r.standings]
        ranks = [s.rank for s in r.standings]
        groups: dict[int, list[int]] = {}
        for index, partition in enumerate(partitions_of(players, PARTITIONS)):
            groups.setdefault(partition, []).append(index)
        for partition, rows in groups.items():
            body = {"round_id": r.round_id, "ladder": r.ladder, "seq": 1, "occurred_at": r.occurred_at,
                    "field_size": r.field_size, "partition": partition,
                    "players": [players[i] for i in rows], "ranks": [ranks[i] for i in rows],
                    "performance": rng.normal(1500.0, 300.0, len(rows)).tolist()}
            out.fanouts.append((players[rows[0]].encode(), json.dumps(body).encode()))
        for player, rank in zip(players, ranks):
            out.events.append((player.encode(), change(r, player, rank, rng).to_json().encode()))
    return out


async def kafka_floor(bootstrap: str, prefix: str, messages: Messages) -> tuple[float, float]:
    """Produce every message and consume it back: (wall seconds, this process's CPU seconds)."""
    topics = {f"{prefix}rounds": messages.rounds, f"{prefix}player-updates": messages.fanouts,
              f"{prefix}rating-changes": messages.events}
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=ACKS, linger_ms=LINGER_MS,
                                max_batch_size=BATCH_BYTES, max_request_size=64 * 1024 * 1024)
    consumer = AIOKafkaConsumer(*topics, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                group_id=None, fetch_max_wait_ms=20, max_partition_fetch_bytes=BATCH_BYTES)
    await producer.start()
    await consumer.start()
    try:
        cpu, started = time.process_time(), time.perf_counter()
        sends = [await producer.send(topic, value, key=key) for topic, batch in topics.items() for key, value in batch]
        await asyncio.gather(*sends)
        got = 0
        deadline = time.monotonic() + CONSUME_TIMEOUT_S
        while got < messages.count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"read {got} of {messages.count} messages back")
            records = await consumer.getmany(timeout_ms=100, max_records=100_000)
            got += sum(len(batch) for batch in records.values())
        return time.perf_counter() - started, time.process_time() - cpu
    finally:
        await producer.stop()
        await consumer.stop()


async def redis_floor(url: str, rounds: list[RoundResult], messages: Messages, tag: str) -> tuple[float, float]:
    """Write the mandated per-player and per-round state: (wall seconds, this process's CPU seconds)."""
    client = aioredis.Redis.from_url(url)
    use_hiredis_packing(client)
    state = b"s" * STATE_BYTES
    events = iter(value for _, value in messages.events)
    try:
        cpu, started = time.process_time(), time.perf_counter()
        for r in rounds:
            ladder = f"{r.ladder}{tag}"
            players = [s.player for s in r.standings]
            for first in range(0, len(players), PLAYERS_PER_PIPELINE):
                chunk = players[first:first + PLAYERS_PER_PIPELINE]
                changes = [next(events) for _ in chunk]
                pipe = client.pipeline(transaction=False)
                for player, event in zip(chunk, changes):
                    pipe.hset(keys.player(ladder, player), mapping={
                        "last_seq": 7, "mu": "1512.3456789012345", "sigma": "118.12345678901234", "rounds": 12,
                        "last_round": r.round_id, "last_time": "1763800000.0", "display_rating": "1276.1098",
                        "tier": "", "state": state})
                    history = keys.history(ladder, player)
                    pipe.rpush(history, event)
                    pipe.ltrim(history, -HISTORY_LENGTH, -1)
                pipe.zadd(keys.leaderboard(ladder), {p: 1276.1098 + i for i, p in enumerate(chunk)})
                pipe.hset(keys.round_results(ladder, r.round_id), mapping=dict(zip(chunk, changes)))
                await pipe.execute()
            await client.hset(keys.round_record(ladder, r.round_id), mapping={"status": "rated", "pending": 0})
        return time.perf_counter() - started, time.process_time() - cpu
    finally:
        await client.aclose()


def c_kafka_floor(bootstrap: str, prefix: str, messages: Messages) -> float:
    """The Kafka floor through librdkafka (confluent_kafka): wall seconds, or NaN if not installed."""
    try:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
    except ImportError:
        return math.nan
    topics = {f"{prefix}rounds": messages.rounds, f"{prefix}player-updates": messages.fanouts,
              f"{prefix}rating-changes": messages.events}
    producer = Producer({"bootstrap.servers": bootstrap, "acks": ACKS, "linger.ms": LINGER_MS,
                         "batch.size": BATCH_BYTES, "queue.buffering.max.messages": 1_000_000})
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{prefix}floor", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 20})
    # partitions assigned, no group join (the embedded broker answers a JoinGroup only after seconds)
    consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING) for topic in topics
                     for partition in range(PARTITIONS)])
    try:
        warm = 0  # connections, metadata and fetch positions settled before the clock starts
        for topic in topics:
            producer.produce(topic, b"warm-up", b"warm-up")
        producer.flush()
        deadline = time.monotonic() + CONSUME_TIMEOUT_S
        while warm < len(topics) and time.monotonic() < deadline:
            warm += sum(1 for m in consumer.consume(num_messages=10, timeout=0.1) if m.error() is None)
        started = time.perf_counter()
        for topic, batch in topics.items():
            for key, value in batch:
                producer.produce(topic, value, key)
        producer.flush()
        got, deadline = 0, time.monotonic() + CONSUME_TIMEOUT_S
        while got < messages.count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"librdkafka read {got} of {messages.count} messages back")
            got += sum(1 for m in consumer.consume(num_messages=100_000, timeout=0.1) if m.error() is None)
        return time.perf_counter() - started
    finally:
        consumer.close()


def measure(stack: LocalStack, rounds: list[RoundResult], tag: str) -> Floor:
    """The floor of ``rounds`` (all of one size) on ``stack``; ``tag`` keeps this run's topics and Redis keys
    apart from any other's on the same stack."""
    size = rounds[0].field_size
    participations = sum(r.field_size for r in rounds)
    warm_up()  # the engine's compiled loops loaded before timing
    started = time.perf_counter()
    replay(rounds, preset(Settings.from_env().engine_preset), keep_rounds=False)
    replay_s = time.perf_counter() - started

    messages = encode(rounds)
    prefix = f"floor{size}-{tag}-"
    ensure_topics(stack.bootstrap, {f"{prefix}{name}": PARTITIONS for name in ("rounds", "player-updates", "rating-changes")})
    assert stack.broker.process is not None
    broker_before = process_cpu_s(stack.broker.process.pid)
    kafka_s, kafka_cpu = asyncio.run(kafka_floor(stack.bootstrap, prefix, messages))
    broker_cpu = process_cpu_s(stack.broker.process.pid) - broker_before
    c_prefix = f"c-{prefix}"
    ensure_topics(stack.bootstrap, {f"{c_prefix}{name}": PARTITIONS for name in ("rounds", "player-updates", "rating-changes")})
    c_kafka_s = c_kafka_floor(stack.bootstrap, c_prefix, messages)

    admin = redis.Redis.from_url(stack.redis_url)
    server_before = redis_cpu_s(admin)
    redis_s, redis_cpu = asyncio.run(redis_floor(stack.redis_url, rounds, messages, f"-floor-{tag}"))
    server_cpu = redis_cpu_s(admin) - server_before
    admin.close()
    return Floor(size, len(rounds), participations, messages.count, replay_s, kafka_s, kafka_cpu, broker_cpu,
                 c_kafka_s, redis_s,
                 server_cpu, redis_cpu)


def median(runs: list[Floor]) -> Floor:
    """Field-wise medians of repeated runs of one size."""
    fields = [name for name in Floor.__dataclass_fields__
              if name not in ("size", "rounds", "participations", "messages")]
    first = runs[0]
    return Floor(first.size, first.rounds, first.participations, first.messages,
                 *(statistics.median(getattr(r, name) for r in runs) for name in fields))


def table(floors: list[Floor]) -> list[str]:
    rows = ["| players/round | rounds | participations | messages | replay µs/part. | Kafka floor: wall | "
            "broker CPU | Kafka client CPU | Kafka floor, C client: wall | Redis floor: server CPU | Redis wall | "
            "Redis client CPU | floor µs/part. | floor / replay | Redis server CPU / replay |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for f in floors:
        p = f.per_part
        rows.append(f"| {f.size:,} | {f.rounds:,} | {f.participations:,} | {f.messages:,} | {p(f.replay_s):.1f} | "
                    f"{p(f.kafka_s):.1f} | {p(f.broker_cpu_s):.1f} | {p(f.kafka_client_cpu_s):.1f} | {p(f.c_kafka_s):.1f} | "
                    f"{p(f.redis_server_cpu_s):.1f} | {p(f.redis_s):.1f} | {p(f.redis_client_cpu_s):.1f} | "
                    f"{p(f.floor_s):.1f} | **{f.floor_s / f.replay_s:.1f}x** | "
                    f"**{f.redis_server_cpu_s / f.replay_s:.1f}x** |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="2,10,1000,10000",
                        help="round sizes (rounds as bench/workloads.py draws them)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per size (interleaved; medians shown)")
    parser.add_argument("--rounds", type=int, default=0, help="rounds per size instead of the defaults (smoke runs)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if any(s < 2 for s in sizes):
        parser.error("--sizes: rounds need at least 2 players")
    workload = {s: make_rounds(s, args.rounds or default_rounds(s), f"floor{s}", seed=s) for s in sizes}
    runs: dict[int, list[Floor]] = {s: [] for s in sizes}
    with LocalStack() as stack:
        for run in range(args.repeat):
            for size in sizes:
                runs[size].append(measure(stack, workload[size], str(run)))
                print(f"run {run + 1}, {size}-player rounds done", file=sys.stderr)
    print(f"\nµs per participation; {args.repeat} run(s) per size, medians; 2 x replay is the issue's aim\n")
    print("\n".join(table([median(runs[s]) for s in sizes])))


if __name__ == "__main__":
    main()
