"""End-to-end pipeline benchmark on the embedded local stack (Tansu broker + redis-server).

For rounds of 10, 1,000 and 10,000 players (one ladder per size; players drawn from a pool of
:data:`POOL` players: 2,000 for 10-player lobbies, so consecutive lobbies rarely share players
and rounds pipeline; twice the round size for the big rounds, so every round shares about half
its players with the previous one and waits for it at the per-player barrier), it measures:

* throughput: participations per second from the first publish (all rounds sent at once) to
  the last rating-change event read back from Kafka (and, "all rated", to the moment Redis
  counts every round rated);
* latency: for rounds published one at a time (the next once the previous is rated), the time
  from publish to the round's status ``rated`` in Redis, p50 and p99;
* next to it, ``stream.batch.replay`` of the same rounds in process (the reference);
* CPU spent during the throughput run per participation, by the workers (both processes) and
  by redis-server: less sensitive than wall time to the other load on a shared machine.

Usage: python bench/pipeline.py [--workers 2] [--partitions 4] [--sizes 10,1000,10000] [--repeat 3]
Prints a Markdown table (paste it into BENCHMARKS.md, pipeline section).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from redis_stats import command_rows, redis_commands, redis_cpu_s  # noqa: E402
from stream.batch.replay import replay  # noqa: E402
from stream.batch.synthetic import synthetic_rounds  # noqa: E402
from stream.contracts import RoundResult  # noqa: E402
from stream.engine import preset, warm_up  # noqa: E402
from stream.pipeline.topics import ensure  # noqa: E402
from stream.settings import Settings  # noqa: E402
from stream.stack.local import LocalStack  # noqa: E402
from stream.store import keys  # noqa: E402

#: rounds per size in the throughput run and in the latency run
ROUNDS = {10: (400, 40), 1_000: (40, 20), 10_000: (8, 6)}
if os.environ.get("BENCH_QUICK"):
    ROUNDS = {10: (200, 20), 1_000: (10, 5), 10_000: (3, 2)}
POOL = {10: 2_000, 1_000: 2_000, 10_000: 20_000}
POLL_S = 0.002
"""Poll period of a paced round's status (latency resolution)."""
BURST_POLL_S = 0.05
REDIS_COMMANDS_SHOWN = 8
"""Rows of the per-command Redis table printed per round size."""
TIMEOUT_S = 900.0
STARTUP_S = 8.0
"""Seconds given to the workers to join the consumer group before publishing."""


@dataclass
class Figures:
    size: int
    rounds: int
    participations: int
    stream_s: float
    replay_s: float
    latency_p50_s: float
    latency_p99_s: float
    worker_cpu_s: float
    redis_cpu_s: float
    rated_s: float
    redis_commands: dict[str, tuple[int, int]]
    """Redis commands run during the throughput run (scripts' inner calls included): name -> (calls, µs)."""


def process_cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds used so far by these processes (Linux /proc)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / os.sysconf("SC_CLK_TCK")


def make_rounds(size: int, count: int, ladder: str, seed: int) -> list[RoundResult]:
    return list(synthetic_rounds(n_players=POOL[size], n_rounds=count, round_size=size, seed=seed,
                                 ladder=ladder))


def producer(bootstrap: str):  # type: ignore[no-untyped-def]
    from kafka import KafkaProducer

    return KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, max_request_size=64 * 1024 * 1024)


def count_events(bootstrap: str, topic: str, expected: int, done: threading.Event, out: dict[str, float]) -> None:
    """Read ``topic`` from the start until ``expected`` events arrived; record the last arrival time."""
    from kafka import KafkaConsumer, TopicPartition

    # check_crcs=False: kafka-python verifies CRC-32C in pure Python (no crc32c module here),
    # which made this reader, not the service, the bottleneck of the 10,000-player run
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=100,
                             check_crcs=False,
                             max_partition_fetch_bytes=16 * 1024 * 1024)
    while not consumer.partitions_for_topic(topic):
        time.sleep(0.05)
    consumer.assign([TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic)])
    consumer.seek_to_beginning()
    seen = 0
    while seen < expected and not done.is_set():
        for records in consumer.poll(timeout_ms=200).values():
            seen += len(records)
            out["last"] = time.time()
    out["count"] = seen
    consumer.close()


def wait_rated(client: redis.Redis, ladder: str, count: int, poll_s: float) -> None:
    """Until ``count`` rounds of ``ladder`` are rated: one counter read per poll (each bench
    ladder is fresh), so the poll does not compete with the workers for the CPU."""
    deadline = time.monotonic() + TIMEOUT_S
    while int(client.hget(keys.ladder(ladder), "rounds_rated") or 0) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"rounds of {ladder} not rated after {TIMEOUT_S}s")
        time.sleep(poll_s)


def run_size(stack: LocalStack, prefix: str, size: int, worker_pids: list[int], run: int = 0) -> Figures:
    """One throughput run and one latency run of ``size``-player rounds (fresh ladders per ``run``)."""
    n_burst, n_latency = ROUNDS[size]
    burst = make_rounds(size, n_burst, f"burst{size}-{run}", seed=size)
    paced = make_rounds(size, n_latency, f"paced{size}-{run}", seed=size + 1)
    participations = sum(r.field_size for r in burst)

    warm_up()  # the engine's compiled loops loaded before timing
    started = time.perf_counter()
    replay(burst, preset(Settings.from_env().engine_preset), keep_rounds=False)
    replay_s = time.perf_counter() - started

    client = redis.Redis.from_url(stack.redis_url)
    topic = f"{prefix}rounds"
    out: dict[str, float] = {}
    done = threading.Event()
    base = int(client.get(f"bench:{prefix}events") or 0)
    reader = threading.Thread(target=count_events, args=(stack.bootstrap, f"{prefix}rating-changes",
                                                         base + participations, done, out), daemon=True)
    reader.start()
    kafka = producer(stack.bootstrap)
    client.config_resetstat()
    cpu_before, redis_before = process_cpu_s(worker_pids), redis_cpu_s(client)
    first = time.time()
    for r in burst:
        kafka.send(topic, key=r.ladder.encode(), value=r.to_json().encode())
    kafka.flush()
    wait_rated(client, burst[0].ladder, len(burst), BURST_POLL_S)
    rated_s = time.time() - first
    reader.join(timeout=TIMEOUT_S)
    done.set()
    client.set(f"bench:{prefix}events", base + participations)
    stream_s = out["last"] - first
    worker_cpu, redis_cpu = process_cpu_s(worker_pids) - cpu_before, redis_cpu_s(client) - redis_before
    commands = redis_commands(client)

    latencies = []
    for rated, r in enumerate(paced, start=1):
        sent = time.perf_counter()
        kafka.send(topic, key=r.ladder.encode(), value=r.to_json().encode())
        kafka.flush()
        wait_rated(client, r.ladder, rated, POLL_S)
        latencies.append(time.perf_counter() - sent)
    client.set(f"bench:{prefix}events", base + participations + sum(r.field_size for r in paced))
    kafka.close()
    client.close()
    return Figures(size, n_burst, participations, stream_s, replay_s,
                   float(np.percentile(latencies, 50)), float(np.percentile(latencies, 99)), worker_cpu, redis_cpu,
                   rated_s, commands)


def median_run(runs: list[Figures]) -> Figures:
    """The run of median stream throughput (the lower middle one for an even count)."""
    ordered = sorted(runs, key=lambda f: f.participations / f.stream_s)
    return ordered[(len(ordered) - 1) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--sizes", default="10,1000,10000")
    parser.add_argument("--log-level", default="warning", help="the workers' LOG_LEVEL")
    parser.add_argument("--keep-logs", type=Path, default=None, help="copy the workers' logs into this directory")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per size, interleaved; the row shown is the run of median throughput "
                             "(this machine's speed drifts by tens of percent within minutes)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    prefix = "bench-"
    with LocalStack.on_ports() as stack, tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, KAFKA_BOOTSTRAP=stack.bootstrap, REDIS_URL=stack.redis_url, TOPIC_PREFIX=prefix,
                   APP_ID=f"{prefix}app", PARTITIONS=str(args.partitions), LOG_LEVEL=args.log_level)
        ensure(Settings.from_env(env))
        workers = [subprocess.Popen([sys.executable, "-m", "stream", "worker", "--no-web"], cwd=REPO, env=env,
                                    stdout=open(Path(tmp) / f"w{i}.log", "wb"), stderr=subprocess.STDOUT)
                   for i in range(args.workers)]
        try:
            time.sleep(STARTUP_S)
            runs: dict[int, list[Figures]] = {size: [] for size in sizes}
            for run in range(args.repeat):
                for size in sizes:
                    runs[size].append(run_size(stack, prefix, size, [w.pid for w in workers], run))
        finally:
            for w in workers:
                w.terminate()
            for w in workers:
                w.wait(timeout=30)
            if args.keep_logs is not None:
                args.keep_logs.mkdir(parents=True, exist_ok=True)
                for log in Path(tmp).glob("w*.log"):
                    shutil.copy(log, args.keep_logs / log.name)
    rows = [median_run(runs[size]) for size in sizes]
    print(f"\n{args.workers} worker(s), {args.partitions} partitions, preset {Settings.from_env().engine_preset}, "
          f"{args.repeat} run(s) per size (the median run shown)\n")
    print("| players/round | player pool | rounds | participations | stream: part./s | replay: part./s "
          "| all rated: part./s | latency p50 | latency p99 | worker CPU µs/part. | Redis CPU µs/part. | runs: stream part./s |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for f in rows:
        every = " / ".join(f"{r.participations / r.stream_s:,.0f}" for r in runs[f.size])
        print(f"| {f.size:,} | {POOL[f.size]:,} | {f.rounds} | {f.participations:,} | {f.participations / f.stream_s:,.0f} "
              f"| {f.participations / f.replay_s:,.0f} | {f.participations / f.rated_s:,.0f} "
              f"| {f.latency_p50_s * 1000:,.0f} ms | {f.latency_p99_s * 1000:,.0f} ms "
              f"| {f.worker_cpu_s / f.participations * 1e6:,.0f} | {f.redis_cpu_s / f.participations * 1e6:,.0f} "
              f"| {every} |")
    print("\nRedis commands per participation during the throughput runs (INFO commandstats; a script's own time "
          "includes its inner commands'):\n")
    print("| players/round | command | calls/part. | µs/part. |")
    print("|---:|---|---:|---:|")
    for f in rows:
        print("\n".join(command_rows(f"{f.size:,}", f.redis_commands, f.participations, REDIS_COMMANDS_SHOWN)))


if __name__ == "__main__":
    main()
