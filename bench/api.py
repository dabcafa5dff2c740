"""The read API under load: every endpoint next to ``/health``, idle and while rounds are rated.

On the embedded stack (Tansu broker + redis-server) a ``stream worker`` rates the demo's data (the
synthetic rounds of ``stream stack --demo``: 200 players, rounds of 20), then ``--clients``
concurrent HTTP clients (aiohttp, in this process: the load generator shares the machine's cores)
call one endpoint at a time for ``--seconds`` each: requests per second and p50 / p95 latency, and
each endpoint's throughput as a ratio to ``/health`` measured in the same run. Then the same again
while a publisher keeps the pipeline busy with further rounds (``--busy-rate`` rounds per second):
the ratio busy / idle per endpoint. The busy phase's publisher runs in its own process, so it does
not take the load generator's interpreter lock.

``--api process`` serves the API from a ``stream api`` process of its own (the worker runs with
``--no-web``) instead of the worker's thread: what a busy pipeline costs the API through the
shared interpreter lock, apart from the shared cores. ``--pipeline-nice N`` (with ``--api
process``) runs the pipeline's processes (worker, broker, busy publisher) at CPU niceness N: the
deployment where the API has cores of its own, or the first claim on shared ones.

Usage: python bench/api.py [--rounds 500] [--clients 32] [--seconds 5] [--busy-rate 20] [--api worker|process]
                           [--pipeline-nice N]
Prints a Markdown table (BENCHMARKS.md, "Read API").
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from stream.batch.synthetic import synthetic_rounds  # noqa: E402
from stream.contracts import RoundResult  # noqa: E402
from stream.cli.stack import DemoProgress  # noqa: E402
from stream.pipeline.topics import partition_counts  # noqa: E402
from stream.settings import Settings  # noqa: E402
from stream.stack.local import LocalStack  # noqa: E402
from stream.stack.ports import free_port, wait_for_port  # noqa: E402
from stream.pipeline.topics import ensure_topics  # noqa: E402
from stream.store import keys  # noqa: E402

LADDER = "default"
PLAYERS = 200
FIELD = 20
DRAIN_TIMEOUT_S = 600.0


def endpoints(players: list[str], round_id: str) -> dict[str, str]:
    """Name → path of every JSON endpoint the dashboard and clients use."""
    a, b, c = players[:3]
    return {
        "/health": "/health",
        "ladders": "/api/ladders",
        "ladder": f"/api/ladders/{LADDER}",
        "leaderboard page": f"/api/ladders/{LADDER}/leaderboard?offset=0&limit=25",
        "leaderboard search": f"/api/ladders/{LADDER}/leaderboard?search=p1&limit=25",
        "search, no match": f"/api/ladders/{LADDER}/leaderboard?search=zzz&limit=25",
        "distribution": f"/api/ladders/{LADDER}/distribution?bins=30",
        "rounds over time": f"/api/ladders/{LADDER}/activity?points=60",
        "player (200 history)": f"/api/ladders/{LADDER}/players/{a}?history=200",
        "player ranks (200)": f"/api/ladders/{LADDER}/players/{a}/ranks?history=200",
        "recent rounds": f"/api/ladders/{LADDER}/rounds?limit=10",
        "round": f"/api/ladders/{LADDER}/rounds/{round_id}",
        "predict (3 players)": f"/api/ladders/{LADDER}/predict?players={a},{b},{c}",
    }


@dataclass
class Measure:
    ok: int = 0
    errors: int = 0
    latencies: list[float] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.ok / self.seconds if self.seconds else 0.0

    def pct(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def load(base: str, path: str, clients: int, seconds: float) -> Measure:
    """``clients`` coroutines calling ``path`` back to back for ``seconds``."""
    out = Measure()
    connector = aiohttp.TCPConnector(limit=clients)
    async with aiohttp.ClientSession(base, connector=connector) as session:
        deadline = time.perf_counter() + seconds

        async def client() -> None:
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                try:
                    async with session.get(path) as resp:
                        await resp.read()
                        good = resp.status == 200
                except aiohttp.ClientError:
                    good = False
                if good:
                    out.ok += 1
                    out.latencies.append(time.perf_counter() - started)
                else:
                    out.errors += 1

        started = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(clients)))
        out.seconds = time.perf_counter() - started
    return out


def merged(measures: list[Measure]) -> Measure:
    return Measure(ok=sum(m.ok for m in measures), errors=sum(m.errors for m in measures),
                   latencies=[x for m in measures for x in m.latencies], seconds=sum(m.seconds for m in measures))


def measure_all(base: str, paths: dict[str, str], clients: int,
                seconds: float) -> tuple[dict[str, Measure], dict[str, float]]:
    """Each endpoint measured between two ``/health`` measurements: the measures, and each one's
    reference, the mean /health rate just before and just after it (others' load on the shared
    cores drifts within a run). ``/health``'s own row merges all of its measurements."""
    def run(path: str) -> Measure:
        return asyncio.run(load(base, path, clients, seconds))

    before = run(paths["/health"])
    healths, out, reference = [before], {}, {}
    for name, path in paths.items():
        if name == "/health":
            continue
        out[name] = run(path)
        after = run(paths["/health"])
        reference[name] = (before.rate + after.rate) / 2
        healths.append(after)
        before = after
    out["/health"] = merged(healths)
    reference["/health"] = out["/health"].rate
    return out, reference


def feed(settings: Settings, rounds: list[RoundResult], per_second: float, stop: Any, nice: int = 0) -> None:
    """The busy phase's publisher (a process of its own; ``stop``: a multiprocessing Event), at
    CPU niceness ``nice``."""
    os.nice(nice)
    DemoProgress(settings).publish(iter(rounds), per_second, stop)


def renice(pid: int, nice: int) -> None:
    """Lower the CPU priority of a running process (``nice`` > 0)."""
    if nice:
        os.setpriority(os.PRIO_PROCESS, pid, nice)


def wait_rated(r: redis.Redis, count: int) -> None:
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while int(r.hget(keys.ladder(LADDER), "rounds_rated") or 0) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{count} rounds not rated after {DRAIN_TIMEOUT_S:.0f} s")
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=500, help="rounds rated before measuring")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=5.0, help="per endpoint and phase")
    parser.add_argument("--busy-rate", type=float, default=20.0, help="rounds/s published during the busy phase")
    parser.add_argument("--api", choices=("worker", "process"), default="worker",
                        help="serve the API from the worker's thread or from a `stream api` process")
    parser.add_argument("--pipeline-nice", type=int, default=0,
                        help="CPU niceness of the worker, broker and busy publisher (with --api process)")
    args = parser.parse_args()
    if args.pipeline_nice and args.api != "process":
        parser.error("--pipeline-nice needs --api process (with --api worker the API is the worker)")

    all_rounds = list(synthetic_rounds(PLAYERS, args.rounds * 10 + 10, FIELD, ladder=LADDER))
    warm, busy_rounds = all_rounds[:args.rounds], all_rounds[args.rounds:]
    port = free_port()
    with LocalStack() as stack:
        settings = Settings.from_env(environ={**stack.env(), "WEB_PORT": str(port)})
        ensure_topics(stack.bootstrap, partition_counts(settings))
        env = {**os.environ, **stack.env(), "WEB_PORT": str(port), "LOG_LEVEL": "warning"}
        no_web = ["--no-web"] if args.api == "process" else []
        worker = subprocess.Popen([sys.executable, "-m", "stream", "worker", *no_web],
                                  cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        server = subprocess.Popen([sys.executable, "-m", "stream", "api"], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL) if args.api == "process" else None
        renice(worker.pid, args.pipeline_nice)
        if stack.broker.process is not None:
            renice(stack.broker.process.pid, args.pipeline_nice)
        r = redis.Redis.from_url(stack.redis_url)
        try:
            wait_for_port(port, timeout_s=60)
            DemoProgress(settings).publish(iter(warm), 0.0, threading.Event())
            wait_rated(r, len(warm))
            players = sorted(m.decode() for m in r.zrevrange(keys.leaderboard(LADDER), 0, 2))
            paths = endpoints(players, warm[-1].round_id)
            base = f"http://127.0.0.1:{port}"
            idle, idle_ref = measure_all(base, paths, args.clients, args.seconds)
            spawn = multiprocessing.get_context("spawn")
            stop = spawn.Event()
            feeder = spawn.Process(target=feed, args=(settings, busy_rounds, args.busy_rate, stop, args.pipeline_nice))
            before = int(r.hget(keys.ladder(LADDER), "rounds_rated") or 0)
            feeder.start()
            time.sleep(3.0)  # the publisher has started (a new interpreter) and the pipeline is busy
            busy, busy_ref = measure_all(base, paths, args.clients, args.seconds)
            stop.set()
            feeder.join()
            rated_meanwhile = int(r.hget(keys.ladder(LADDER), "rounds_rated") or 0) - before
        finally:
            if server is not None:
                server.terminate()
                server.wait(30)
            worker.terminate()
            try:
                worker.wait(30)
            except subprocess.TimeoutExpired:  # still working off the busy phase's backlog
                worker.kill()
                worker.wait()
            r.close()

    nice = f" (pipeline at niceness {args.pipeline_nice})" if args.pipeline_nice else ""
    print(f"Read API served by {'the worker (a thread)' if args.api == 'worker' else 'a `stream api` process'}{nice}, "
          f"{args.clients} concurrent clients, {args.seconds:g} s per endpoint; "
          f"{len(warm)} rounds of {FIELD} rated ({PLAYERS} players); busy: {rated_meanwhile} more rounds rated "
          f"while measuring (offered {args.busy_rate:g}/s)\n")
    print("Each endpoint's '/ health' is its rate over the mean /health rate measured just before and after it "
          "(the same phase).\n")
    print("| endpoint | req/s | p50 ms | p95 ms | / health | busy req/s | busy p50 ms | busy / health | busy / idle "
          "| errors |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in paths:
        i, b = idle[name], busy[name]
        ratio = i.rate / idle_ref[name] if idle_ref[name] else float("nan")
        busy_ratio = b.rate / busy_ref[name] if busy_ref[name] else float("nan")
        change = b.rate / i.rate if i.rate else float("nan")
        print(f"| {name} | {i.rate:,.0f} | {i.pct(0.5):.1f} | {i.pct(0.95):.1f} | {ratio:.2f} | {b.rate:,.0f} | "
              f"{b.pct(0.5):.1f} | {busy_ratio:.2f} | {change:.2f} | {i.errors + b.errors} |")
    others = [n for n in paths if n != "/health"]
    print(f"\nlowest (req/s) / health: idle {min(idle[n].rate / idle_ref[n] for n in others):.2f}, "
          f"busy {min(busy[n].rate / busy_ref[n] for n in others):.2f}")


if __name__ == "__main__":
    main()
