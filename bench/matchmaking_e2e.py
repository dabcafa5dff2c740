"""End-to-end matchmaking benchmark on the embedded local stack (Tansu broker + redis-server).

Duel tickets of fresh players (each player joins once: the bench measures the service, not the
pairing) go to ``match-tickets`` through ``--workers`` ``stream worker`` processes running
``--queues`` duel queues (tick ``--tick-s``, a widening schedule that accepts any pair at once,
so every ticket is matched at its first tick). Two modes:

* **throughput**: ``--tickets`` tickets published at once; tickets/s matched, from the first
  publish to the moment every ticket was seen in a match on ``matches`` (read back by a consumer).
* **latency**: tickets offered at a fixed rate (``--rate`` tickets/s, default half the throughput
  measured in this run) for ``--latency-seconds``; ticket -> match per ticket = the arrival of its
  match on ``matches`` minus the ticket's publish time; p50 / p99 / max. Target (issue 27): p99 <=
  the tick interval + 100 ms at half the ceiling.

Usage: python bench/matchmaking_e2e.py [--tickets 40000] [--rate R] [--latency-seconds 20]
       [--tick-s 0.5] [--queues 2] [--workers 1] [--partitions 4] [--mode throughput,latency]
Prints a Markdown table (BENCHMARKS.md, matchmaking section).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from clients import LINGER_MS, QUEUE_MESSAGES, _partitions  # noqa: E402

from stream.pipeline.partitioner import partition_for  # noqa: E402
from stream.pipeline.topics import ensure  # noqa: E402
from stream.settings import Settings  # noqa: E402
from stream.stack.local import LocalStack  # noqa: E402

PREFIX = "mmbench-"
STARTUP_S = 10.0
TIMEOUT_S = 600.0


def queues_json(count: int, tick_s: float) -> str:
    return json.dumps({f"duel{i}": {"ladder": f"duel{i}", "teams": 2, "team_size": 1, "tick_interval_s": tick_s,
                                    "max_wait_s": 3600, "widening": [{"after_s": 0, "max_gap": None,
                                                                      "min_quality": 0}]}
                       for i in range(count)})


class Tickets:
    """Publishes duel tickets of fresh players, round-robin over the queues, keyed by queue."""

    def __init__(self, bootstrap: str, topic: str, queues: int) -> None:
        self.topic, self.queues = topic, [f"duel{i}" for i in range(queues)]
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": LINGER_MS,
                                  "queue.buffering.max.messages": QUEUE_MESSAGES})
        self.partitions = _partitions(self.producer, topic)
        self.sent: dict[str, float] = {}
        self.count = 0

    def send(self, run: str) -> None:
        queue = self.queues[self.count % len(self.queues)]
        tid = f"{run}-{self.count}"
        self.count += 1
        value = json.dumps({"ticket_id": tid, "queue": queue, "players": [f"p-{tid}"]}).encode()
        while True:
            try:
                self.producer.produce(self.topic, value, queue.encode(), partition_for(queue, self.partitions))
                break
            except BufferError:
                self.producer.poll(0.01)
        self.sent[tid] = time.time()
        self.producer.poll(0)

    def flush(self) -> None:
        self.producer.flush(60)


class Matches:
    """Reads ``matches`` from its start, in a thread of its own (so arrivals are timed while tickets
    are being published): the arrival time of every ticket's (first) match."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "mm-bench-reader",
                                  "enable.auto.commit": False, "fetch.wait.max.ms": 20})
        count = _partitions(self.consumer, topic)
        self.consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(count)])
        self.arrived: dict[str, float] = {}
        self.formed: dict[str, tuple[float, float]] = {}
        """ticket -> (its match's formed_at, its wait in the pool): where its time went."""
        self.match_ids: set[str] = set()
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while self.running:
            self.poll()

    def close(self) -> None:
        self.running = False
        self.thread.join(timeout=5)

    def poll(self) -> None:
        # the first message as soon as it arrives, then what else is already fetched: consume(n,
        # timeout) alone waits for n messages or the whole timeout, which timed each match up to
        # the timeout late (~25 ms on average with 50 ms)
        first = self.consumer.poll(0.05)
        if first is None:
            return
        for m in [first, *self.consumer.consume(10_000, timeout=0)]:
            if m.error() is not None:
                continue
            now = time.time()
            match = json.loads(m.value())
            self.match_ids.add(match["match_id"])
            for tid in match["tickets"]:
                self.arrived.setdefault(tid, now)
                self.formed.setdefault(tid, (float(match["formed_at"]), float(match["waits"][tid])))

    def wait_for(self, tickets: set[str]) -> float:
        deadline = time.monotonic() + TIMEOUT_S
        while not tickets <= self.arrived.keys():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(tickets - self.arrived.keys())} tickets never matched")
            time.sleep(0.05)
        return max(self.arrived[t] for t in tickets)


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds used so far by a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def throughput(tickets: Tickets, matches: Matches, count: int, run: str,
               pids: dict[str, list[int]] | None = None) -> tuple[float, dict[str, float]]:
    """Tickets/s matched, and CPU µs per ticket of each process group in ``pids`` during the run."""
    count = max(1, count // (2 * len(tickets.queues))) * 2 * len(tickets.queues)
    groups = pids or {}
    before = {name: sum(process_cpu_s(p) for p in ps) for name, ps in groups.items()}
    start = time.time()
    first = tickets.count
    for _ in range(count):
        tickets.send(run)
    tickets.flush()
    ids = {f"{run}-{i}" for i in range(first, first + count)}
    end = matches.wait_for(ids)
    cpu = {name: (sum(process_cpu_s(p) for p in ps) - before[name]) / count * 1e6 for name, ps in groups.items()}
    return count / (end - start), cpu


def latency(tickets: Tickets, matches: Matches, rate: float, seconds: float,
            run: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Ticket -> match of each ticket offered at ``rate`` for ``seconds``, and its parts (the
    worker's clock is this machine's): ``to join`` publish -> the worker applied the join (the
    match's formed_at minus the ticket's wait), ``in pool`` the join -> the tick that formed its
    match (the wait for the next tick and the tick's reads), ``to reader`` formed -> read from
    ``matches`` (the tick's commit and sending, the broker, the reader's fetch)."""
    first = tickets.count
    step = 2 * len(tickets.queues)  # every queue gets an even number: none is left waiting for a partner
    total = max(step, int(rate * seconds) // step * step)
    start = time.monotonic()
    for i in range(total):
        due = start + i / rate
        if (now := time.monotonic()) < due:
            time.sleep(due - now)
        tickets.send(run)
    tickets.flush()
    ids = [f"{run}-{i}" for i in range(first, first + total)]
    matches.wait_for(set(ids))
    sent = np.array([tickets.sent[t] for t in ids])
    formed = np.array([matches.formed[t][0] for t in ids])
    wait = np.array([matches.formed[t][1] for t in ids])
    arrived = np.array([matches.arrived[t] for t in ids])
    parts = {"to join": formed - wait - sent, "in pool": wait, "to reader": arrived - formed}
    return arrived - sent, parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tickets", type=int, default=40_000)
    parser.add_argument("--rate", type=float, default=0.0)
    parser.add_argument("--latency-seconds", type=float, default=20.0)
    parser.add_argument("--tick-s", type=float, default=0.5)
    parser.add_argument("--queues", type=int, default=2)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--mode", default="throughput,latency")
    args = parser.parse_args()
    modes = args.mode.split(",")
    with LocalStack.on_ports() as stack, tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, **stack.env(), TOPIC_PREFIX=PREFIX,
                   APP_ID=f"{PREFIX}app", PARTITIONS=str(args.partitions), LOG_LEVEL="warning",
                   QUEUES=queues_json(args.queues, args.tick_s))
        ensure(Settings.from_env(env))
        workers = [subprocess.Popen([sys.executable, "-m", "stream", "worker", "--no-web"], cwd=REPO, env=env,
                                    stdout=open(Path(tmp) / f"w{i}.log", "wb"), stderr=subprocess.STDOUT)
                   for i in range(args.workers)]
        rows = []
        try:
            time.sleep(STARTUP_S)
            tickets = Tickets(stack.bootstrap, f"{PREFIX}match-tickets", args.queues)
            matches = Matches(stack.bootstrap, f"{PREFIX}matches")
            throughput(tickets, matches, 200 * args.queues, "warm")  # every queue ticked once
            pids = {"workers": [w.pid for w in workers], "redis": [stack.redis.process.pid],
                    "broker": [stack.broker.process.pid]}
            ceiling = 0.0
            if "throughput" in modes:
                ceiling, cpu = throughput(tickets, matches, args.tickets, "burst", pids)
                shares = ", ".join(f"{name} {us:,.0f}" for name, us in cpu.items())
                print(f"throughput: {ceiling:,.0f} tickets/s matched; CPU µs per ticket: {shares}", file=sys.stderr)
                rows.append(f"| throughput | {args.tickets:,} at once | {ceiling:,.0f} tickets/s | | | {shares} |")
            if "latency" in modes:
                rate = args.rate or (ceiling / 2 if ceiling else 1000.0)
                lat, parts = latency(tickets, matches, rate, args.latency_seconds, "paced")
                p50, p99, top = (float(np.percentile(lat, q)) * 1000 for q in (50, 99, 100))
                split = "; ".join(f"{name} p50 {np.percentile(v, 50) * 1000:,.0f} / p99 {np.percentile(v, 99) * 1000:,.0f} ms"
                                  for name, v in parts.items())
                print(f"latency at {rate:,.0f} tickets/s: p50 {p50:,.0f} ms, p99 {p99:,.0f} ms ({split})", file=sys.stderr)
                rows.append(f"| latency | {rate:,.0f} tickets/s for {args.latency_seconds:g} s | | "
                            f"{p50:,.0f} / {p99:,.0f} / {top:,.0f} ms | "
                            f"{'met' if p99 <= args.tick_s * 1000 + 100 else 'not met'} | |")
            tickets.flush()
            matches.close()
        finally:
            for w in workers:
                w.terminate()
            for w in workers:
                w.wait(timeout=30)
    print(f"\n{args.workers} worker(s), {args.queues} duel queue(s), tick {args.tick_s:g} s, {args.partitions} "
          f"partitions; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC\n")
    print("| mode | offered | matched | ticket -> match p50 / p99 / max | p99 <= tick + 100 ms | CPU µs per ticket |")
    print("|---|---:|---:|---:|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
