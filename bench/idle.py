"""Idle cost of a worker, and the latency of the first round after it idled.

On the embedded local stack (Tansu broker + redis-server), a worker (``stream worker``) rates a
few warm-up rounds, then gets no input. Measured:

* the worker's CPU (user + system, /proc) over each idle gap, as a share of one core (the aim:
  at most 2 %), and the broker's and redis-server's CPU over the same gaps;
* after each gap of ``--gap-s`` seconds, one 10-player round is published and the time until Redis
  counts it rated (publish to ``rated``, polled every millisecond) is recorded: p50, p99, max
  over ``--samples`` gaps (the aim: p99 within 100 ms after an idle minute).

With ``--reference DIR`` (a checkout of another commit, e.g. ``git archive BASE | tar -x -C DIR``)
a second worker runs that code on the same stack (its own topics and ladder) through the same
gaps, so both are measured in the same run: the broker and Redis CPU is then the two workers'.

Usage: python bench/idle.py [--gap-s 60] [--samples 5] [--partitions 4] [--web] [--reference DIR]
Prints a Markdown table (BENCHMARKS.md, idle section).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from clients import RoundProducer  # noqa: E402
from pipeline import STARTUP_S, process_cpu_s, wait_rated  # noqa: E402
from workloads import make_rounds  # noqa: E402

from stream.pipeline.topics import ensure  # noqa: E402
from stream.settings import Settings  # noqa: E402
from stream.stack.local import LocalStack  # noqa: E402

WARMUP_ROUNDS = 20
SETTLE_S = 3.0
"""Seconds after the warm-up before the first idle gap is measured (the last acks and commits)."""
LATENCY_POLL_S = 0.001


@dataclass
class Worker:
    """One worker under test: its code, topics, ladder, and what was measured."""

    name: str
    code: Path
    prefix: str
    process: subprocess.Popen[bytes] | None = None
    cpu_s: float = 0.0
    latencies_s: list[float] = field(default_factory=list)

    @property
    def ladder(self) -> str:
        return f"{self.prefix}ladder"

    def start(self, stack: LocalStack, args: argparse.Namespace, port: int, log: Path) -> None:
        env = dict(os.environ, **stack.env(), TOPIC_PREFIX=self.prefix,
                   APP_ID=f"{self.prefix}app", PARTITIONS=str(args.partitions), LOG_LEVEL="warning",
                   WEB_PORT=str(port), PYTHONPATH=str(self.code))
        ensure(Settings.from_env(env))
        command = [sys.executable, "-m", "stream", "worker"] + ([] if args.web else ["--no-web"])
        self.process = subprocess.Popen(command, cwd=self.code, env=env, stdout=open(log, "wb"),
                                        stderr=subprocess.STDOUT)

    def publish(self, kafka: RoundProducer, rounds) -> None:  # type: ignore[no-untyped-def]
        for r in rounds:
            kafka.send(self.ladder, r.to_json().encode())
        kafka.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gap-s", type=float, default=60.0, help="idle seconds before each measured round")
    parser.add_argument("--samples", type=int, default=5, help="idle gaps (and first rounds after them)")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--web", action="store_true", help="run the worker with its read API (as `stream stack` does)")
    parser.add_argument("--reference", type=Path, default=None, help="checkout of the code to compare with")
    args = parser.parse_args()
    workers = [Worker("this commit", REPO, "idle-")]
    if args.reference:
        workers.append(Worker(f"reference ({args.reference.name})", args.reference.resolve(), "idle-ref-"))
    idle_s = service_cpu = 0.0
    with LocalStack.on_ports() as stack, tempfile.TemporaryDirectory() as tmp:
        for i, worker in enumerate(workers):
            worker.start(stack, args, stack.redis.port + 1 + i, Path(tmp) / f"worker{i}.log")
        services = [p.pid for p in (stack.broker.process, stack.redis.process) if p is not None]
        client = redis.Redis.from_url(stack.redis_url)
        kafka: dict[str, RoundProducer] = {}
        try:
            time.sleep(STARTUP_S)  # the workers have created their topics
            kafka = {w.name: RoundProducer(stack.bootstrap, f"{w.prefix}rounds") for w in workers}
            rounds = {w.name: make_rounds(10, WARMUP_ROUNDS + args.samples, w.ladder, seed=7, ladders=1)
                      for w in workers}
            for w in workers:
                w.publish(kafka[w.name], rounds[w.name][:WARMUP_ROUNDS])
            for w in workers:
                wait_rated(client, [w.ladder], WARMUP_ROUNDS, 0.05)
            time.sleep(SETTLE_S)
            for sample in range(args.samples):
                pids = [w.process.pid for w in workers if w.process]
                cpu = [process_cpu_s([pid]) for pid in pids]
                other, started = process_cpu_s(services), time.monotonic()
                time.sleep(args.gap_s)
                idle_s += time.monotonic() - started
                service_cpu += process_cpu_s(services) - other
                for w, pid, before in zip(workers, pids, cpu):
                    w.cpu_s += process_cpu_s([pid]) - before
                for w in workers:  # one round each, one after the other
                    sent = time.perf_counter()
                    w.publish(kafka[w.name], [rounds[w.name][WARMUP_ROUNDS + sample]])
                    wait_rated(client, [w.ladder], WARMUP_ROUNDS + sample + 1, LATENCY_POLL_S)
                    w.latencies_s.append(time.perf_counter() - sent)
        finally:
            for producer in kafka.values():
                producer.close()
            client.close()
            for w in workers:
                if w.process:
                    w.process.terminate()
                    w.process.wait(timeout=30)
    print(f"\n{args.partitions} partitions{', workers with their read API' if args.web else ''}, "
          f"{args.samples} idle gap(s) of {args.gap_s:g} s ({idle_s:.0f} s idle in all); "
          f"broker + redis-server CPU while idle: {100 * service_cpu / idle_s:.2f} % of a core\n")
    print("| worker | CPU while idle | first round after a gap: p50 | p99 | max |")
    print("|---|---:|---:|---:|---:|")
    for w in workers:
        ms = np.asarray(w.latencies_s) * 1000
        print(f"| {w.name} | {100 * w.cpu_s / idle_s:.2f} % of a core | {np.percentile(ms, 50):.0f} ms "
              f"| {np.percentile(ms, 99):.0f} ms | {ms.max():.0f} ms |")


if __name__ == "__main__":
    main()
