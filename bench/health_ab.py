"""Rating health's CPU: same-run A/B of phase one's handler in process (no Kafka, no Faust), with its A/A control.

Method. The same recorded batches (bench/workloads.py's duels and 10-player lobbies, ``--rounds``
rounds over 2 ladders, encoded once, cut into batches of ``--batch`` as a worker's phase one takes
them) go through ``handle_rounds`` against one private redis-server, emptied (FLUSHALL) before each
pass, so every pass starts from the same state and does the same work. Health on (A: HEALTH_WINDOW
``--window``) or off (B: 0); the worker's once-a-second timer is stood in for by a
``RatingHealth.flush`` every ``--flush-every`` batches, and a forced one at the end. Phase two
runs after each batch (phase one's barrier needs its updates applied) but is timed apart: health
has no code in it. Measured: this process's CPU (``time.process_time``: Redis's own work and the
waits are not in it) in phase one's handler and the flushes, per round; a full garbage collection
before each pass, so a pass pays for the garbage it makes.

Passes come in pairs in ABBA order (A B, then B A, ...), each A/B pair followed by an A/A pair (two
passes of the same settings, X Y / Y X): the A/A pairs are the noise floor, measured in the same
run, between the same neighbours. Printed per size: the median of the pairs' ratios with the sign
test's 95 % interval (bench/abstats.py) for A/B and for A/A, the median difference in µs per round,
rating health's own CPU (``RatingHealth.cpu_s``, thread time in its scoring), and, given the
worker's CPU per round (``--worker-cpu``: bench/pipeline.py's ``--ab`` table), the difference as
a share of the worker's CPU (phase one + phase two + Faust, Kafka and the rest).

Usage: python bench/health_ab.py [--rounds 3000] [--batch 64] [--repeat 20] [--size 2,10]
       [--worker-cpu 2=284,10=700]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from abstats import median_ci, pair_orders  # noqa: E402
from workloads import make_rounds  # noqa: E402

from stream.pipeline.context import PipelineContext  # noqa: E402
from stream.pipeline.messages import Incoming, Origin  # noqa: E402
from stream.pipeline.outbox import TopicNames  # noqa: E402
from stream.pipeline.phase_one import handle_rounds  # noqa: E402
from stream.pipeline.updates_batches import phase_two_batch  # noqa: E402
from stream.settings import Settings  # noqa: E402
from stream.stack.redis_server import RedisServer  # noqa: E402

NAMES = TopicNames(player_updates="player-updates", rating_changes="rating-changes", rounds_dlq="rounds-dlq")


@dataclass(frozen=True)
class Pass:
    """One pass over the recorded batches: CPU seconds of phase one (handler + health's flushes),
    of phase two, and of rating health's own code."""

    phase_one_s: float
    phase_two_s: float
    health_s: float


async def run_pass(url: str, batches: list[list[Incoming]], window: int, flush_every: int) -> Pass:
    """Rate the recorded batches through the handlers on an empty Redis, health window ``window``."""
    ctx = PipelineContext.from_settings(Settings(redis_url=url, partitions=4, health_window=window))

    async def send(records, what):  # type: ignore[no-untyped-def]
        pass

    gc.collect()
    one = two = 0.0
    for k, batch in enumerate(batches):
        started = time.process_time()
        result = await handle_rounds(ctx, batch)
        if ctx.health.on and (k + 1) % flush_every == 0:
            await ctx.health.flush(ctx.store.client)
        one += time.process_time() - started
        started = time.process_time()
        await phase_two_batch(ctx, NAMES, [Incoming(m.value, m.key, Origin("player-updates", m.partition, i))
                                           for i, m in enumerate(result.messages)], send)
        two += time.process_time() - started
    started = time.process_time()
    await ctx.health.flush(ctx.store.client, force=True)
    one += time.process_time() - started
    await ctx.store.close()
    return Pass(one, two, ctx.health.cpu_s)


def parse_sizes(text: str) -> list[int]:
    return [int(s) for s in text.split(",") if s.strip()]


def parse_worker_cpu(text: str) -> dict[int, float]:
    """``2=284,10=700`` -> {2: 284.0, 10: 700.0} (µs of worker CPU per round)."""
    return {int(k): float(v) for k, v in (item.split("=") for item in text.split(",") if item.strip())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3000)
    parser.add_argument("--batch", type=int, default=64, help="rounds per phase-one batch (PHASE_ONE_BATCH)")
    parser.add_argument("--repeat", type=int, default=20, help="A/B pairs (and as many A/A pairs)")
    parser.add_argument("--size", default="2,10", help="players per round, comma-separated")
    parser.add_argument("--window", type=int, default=500, help="HEALTH_WINDOW of the 'on' passes")
    parser.add_argument("--flush-every", type=int, default=16,
                        help="batches between two flushes of rating health (the worker's 1 s timer)")
    parser.add_argument("--worker-cpu", default="", metavar="SIZE=US,...",
                        help="the worker's CPU µs per round rated (bench/pipeline.py --ab): print the share")
    args = parser.parse_args()
    worker_cpu = parse_worker_cpu(args.worker_cpu)
    settings = {"A": args.window, "B": 0, "X": args.window, "Y": args.window}
    rows = []
    server = RedisServer().start()
    client = redis.Redis.from_url(server.url)
    try:
        for size in parse_sizes(args.size):
            rounds = make_rounds(size, args.rounds, f"h{size}", seed=size, ladders=2)
            events = [Incoming(r.to_json().encode()) for r in rounds]
            batches = [events[a:a + args.batch] for a in range(0, len(events), args.batch)]

            def one_pass(variant: str) -> Pass:
                client.flushall()
                return asyncio.run(run_pass(server.url, batches, settings[variant], args.flush_every))

            one_pass("A"), one_pass("B")  # warm-up: imports, caches, the engine's first calls
            passes: dict[str, list[Pass]] = {v: [] for v in settings}
            ratios: dict[bool, list[float]] = {False: [], True: []}
            deltas: list[float] = []
            for first, second, control in pair_orders(args.repeat):
                p, q = one_pass(first), one_pass(second)
                passes[first].append(p)
                passes[second].append(q)
                a, b = (p, q) if first in "AX" else (q, p)
                ratios[control].append(a.phase_one_s / b.phase_one_s)
                if not control:
                    deltas.append((a.phase_one_s - b.phase_one_s) / len(rounds) * 1e6)
            ab, aa, delta = median_ci(ratios[False]), median_ci(ratios[True]), median_ci(deltas)
            us = {v: statistics.median(p.phase_one_s for p in passes[v]) / len(rounds) * 1e6 for v in "AB"}
            two = statistics.median(p.phase_two_s for v in "AB" for p in passes[v]) / len(rounds) * 1e6
            own = statistics.median(p.health_s for p in passes["A"]) / len(rounds) * 1e6
            share = (f"**{delta.median / worker_cpu[size]:.1%}** [{delta.low / worker_cpu[size]:.1%}, "
                     f"{delta.high / worker_cpu[size]:.1%}] of {worker_cpu[size]:,.0f}") if size in worker_cpu else "-"
            rows.append(f"| {size} | {us['A']:.1f} | {us['B']:.1f} | {two:.1f} | **{ab.ratio_text()}** "
                        f"| {aa.ratio_text()} | {delta.median:+.1f} [{delta.low:+.1f}, {delta.high:+.1f}] "
                        f"| {own:.1f} | {share} |")
            print(f"{size}-player rounds done (load {' / '.join(f'{x:.2f}' for x in os.getloadavg())})",
                  file=sys.stderr)
    finally:
        client.close()
        server.stop()
    print(f"\nPhase one's handler with rating health on (A: HEALTH_WINDOW={args.window}) and off (B: 0), {args.rounds} "
          f"rounds per pass in batches of {args.batch}, a health flush every {args.flush_every} batches; {args.repeat} "
          "A/B pairs (ABBA) interleaved with as many A/A pairs; process CPU µs per round; intervals: sign test, "
          f"median of the pairs; load at end {' / '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print("| players/round | A: phase one µs/round | B: phase one µs/round | phase two µs/round (not affected) "
          "| A/B: A / B - 1 [95 % CI] | A/A control | A - B µs/round [CI] | health's own µs/round "
          "| A - B as a share of the worker's CPU per round (µs) |")
    print("|---:|---:|---:|---:|---|---|---|---:|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
