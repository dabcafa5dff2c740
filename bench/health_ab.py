"""Rating health's CPU: same-run A/B of phase one's handler in process (no Kafka, no Faust), with its A/A control.

Method. The same recorded batches (bench/workloads.py's duels and 10-player lobbies, ``--rounds``
rounds over 2 ladders, encoded once, cut into batches of ``--batch`` as a worker's phase one takes
them) go through ``handle_rounds`` against private redis-servers, emptied (FLUSHALL) before each
pass, so every pass starts from the same state and does the same work. Health on (A: HEALTH_WINDOW
``--window``) or off (B: 0); the worker's once-a-second timer is stood in for by a
``RatingHealth.flush`` every ``--flush-every`` batches, and a forced one at the end. Phase two
runs after each batch (phase one's barrier needs its updates applied) but is timed apart: health
has no code in it. Measured: this process's CPU (``time.process_time``: Redis's own work and the
waits are not in it) in phase one's handler and the flushes, per round; a full garbage collection
before each pass.

``--interleave batch`` (default): a pair is ONE pass in which both variants, each with its own
context and redis-server, take each batch in turn (A then B, then B then A, ...), so both meet the
machine's load within milliseconds of each other; the garbage collector's time is counted apart
per variant and left out of the A/B (both variants' objects are on the heap, so a full collection
health's garbage triggers can land on either: a lobby run saw B's median at 3x A's).
``--interleave pass``: a pair is two passes, one variant alone each; the A/B then includes the
collections, each paid by the variant whose garbage triggered it (health's share of them), but a
pass lasts a second, and the machine's load drifts in between.

Pairs come in ABBA order (A first, then B first, ...), each A/B pair followed by an A/A pair (two
variants with the same settings as A, X Y / Y X): the A/A pairs are the noise floor, measured in the
same run, between the same neighbours. Printed per size: the median of the pairs' ratios with the
sign test's 95 % interval (bench/abstats.py) for A/B and for A/A, the median difference in µs per
round, rating health's own CPU (``RatingHealth.cpu_s``, thread time in its scoring), and, given
the worker's CPU per round (``--worker-cpu``: bench/pipeline.py's ``--ab`` table), the difference
as a share of the worker's CPU (phase one + phase two + Faust, Kafka and the rest).

Usage: python bench/health_ab.py [--rounds 3000] [--batch 64] [--repeat 20] [--size 2,10]
       [--interleave batch|pass] [--worker-cpu 2=340,10=750]
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


@dataclass
class Pass:
    """One variant's pass over the recorded batches: CPU seconds of phase one (handler + health's
    flushes; garbage collections excluded), of the garbage collections it triggered, of phase two,
    and of rating health's own code."""

    phase_one_s: float = 0.0
    gc_s: float = 0.0
    phase_two_s: float = 0.0
    health_s: float = 0.0

    @property
    def total_s(self) -> float:
        """Phase one's CPU with the collections it triggered (the A/B's figure)."""
        return self.phase_one_s + self.gc_s


class GcClock:
    """CPU seconds of the garbage collector, counted to the pass running when it collects."""

    def __init__(self) -> None:
        self.running: Pass | None = None
        self.started = 0.0
        self.in_phase_one = False

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self.started = time.process_time()
        elif self.running is not None and self.in_phase_one:
            self.running.gc_s += time.process_time() - self.started


GC = GcClock()


async def run_passes(urls: list[str], batches: list[list[Incoming]], windows: list[int], flush_every: int,
                     reverse: bool) -> list[Pass]:
    """Rate the recorded batches through the handlers once per variant (health window ``windows[i]``
    on the redis-server ``urls[i]``, emptied), the variants taking each batch in turn (``reverse``:
    the last first at the even batches)."""
    ctxs = [PipelineContext.from_settings(Settings(redis_url=url, partitions=4, health_window=w))
            for url, w in zip(urls, windows)]
    passes = [Pass() for _ in ctxs]

    async def send(records, what):  # type: ignore[no-untyped-def]
        pass

    async def one(side: int, k: int) -> None:
        ctx, p = ctxs[side], passes[side]
        GC.running, GC.in_phase_one = p, True
        gc_before = p.gc_s
        started = time.process_time()
        if k < len(batches):
            result = await handle_rounds(ctx, batches[k])
            if ctx.health.on and (k + 1) % flush_every == 0:
                await ctx.health.flush(ctx.store.client)
        else:  # the end: what the timer would record within FLUSH_S
            await ctx.health.flush(ctx.store.client, force=True)
        p.phase_one_s += time.process_time() - started - (p.gc_s - gc_before)
        GC.in_phase_one = False
        if k < len(batches):
            started = time.process_time()
            await phase_two_batch(ctx, NAMES, [Incoming(m.value, m.key, Origin("player-updates", m.partition, i))
                                               for i, m in enumerate(result.messages)], send)
            p.phase_two_s += time.process_time() - started

    gc.collect()
    sides = list(range(len(ctxs)))
    for k in range(len(batches) + 1):
        for side in (sides[::-1] if (k % 2 == 0) == reverse else sides):
            await one(side, k)
    GC.running = None
    for ctx, p in zip(ctxs, passes):
        p.health_s = ctx.health.cpu_s
        await ctx.store.close()
    return passes


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
    parser.add_argument("--interleave", choices=("batch", "pass"), default="batch",
                        help="a pair: one pass, the two variants taking each batch in turn (batch), or two passes")
    parser.add_argument("--worker-cpu", default="", metavar="SIZE=US,...",
                        help="the worker's CPU µs per round rated (bench/pipeline.py --ab): print the share")
    args = parser.parse_args()
    worker_cpu = parse_worker_cpu(args.worker_cpu)
    settings = {"A": args.window, "B": 0, "X": args.window, "Y": args.window}
    rows = []
    servers = [RedisServer().start() for _ in range(2)]
    clients = [redis.Redis.from_url(server.url) for server in servers]
    gc.callbacks.append(GC)
    try:
        for size in parse_sizes(args.size):
            rounds = make_rounds(size, args.rounds, f"h{size}", seed=size, ladders=2)
            events = [Incoming(r.to_json().encode()) for r in rounds]
            batches = [events[a:a + args.batch] for a in range(0, len(events), args.batch)]

            def run(variants: tuple[str, ...], reverse: bool = False) -> list[Pass]:
                for client in clients[:len(variants)]:
                    client.flushall()
                return asyncio.run(run_passes([server.url for server in servers[:len(variants)]], batches,
                                              [settings[v] for v in variants], args.flush_every, reverse))

            def pair(first: str, second: str) -> tuple[Pass, Pass]:
                """The two variants' passes, in the order asked."""
                if args.interleave == "pass":
                    return run((first,))[0], run((second,))[0]
                p, q = run((first, second))
                return p, q

            def figure(p: Pass) -> float:
                """The A/B's figure: phase one's CPU, with the collections it triggered when they are its own."""
                return p.total_s if args.interleave == "pass" else p.phase_one_s

            run(("A", "B"))  # warm-up: imports, caches, the engine's first calls
            passes: dict[str, list[Pass]] = {v: [] for v in settings}
            ratios: dict[bool, list[float]] = {False: [], True: []}
            deltas: list[float] = []
            for first, second, control in pair_orders(args.repeat):
                p, q = pair(first, second)
                passes[first].append(p)
                passes[second].append(q)
                a, b = (figure(p), figure(q)) if first in "AX" else (figure(q), figure(p))
                ratios[control].append(a / b)
                if not control:
                    deltas.append((a - b) / len(rounds) * 1e6)
            ab, aa, delta = median_ci(ratios[False]), median_ci(ratios[True]), median_ci(deltas)

            def us(values: list[float]) -> float:
                return statistics.median(values) / len(rounds) * 1e6

            one = {v: us([figure(p) for p in passes[v]]) for v in "AB"}
            collected = {v: us([p.gc_s for p in passes[v]]) for v in "AB"}
            two = us([p.phase_two_s for v in "AB" for p in passes[v]])
            own = us([p.health_s for p in passes["A"]])
            share = (f"**{delta.median / worker_cpu[size]:.1%}** [{delta.low / worker_cpu[size]:.1%}, "
                     f"{delta.high / worker_cpu[size]:.1%}] of {worker_cpu[size]:,.0f}") if size in worker_cpu else "-"
            rows.append(f"| {size} | {one['A']:.1f} | {one['B']:.1f} | {collected['A']:.1f} / {collected['B']:.1f} "
                        f"| {two:.1f} | **{ab.ratio_text()}** | {aa.ratio_text()} "
                        f"| {delta.median:+.1f} [{delta.low:+.1f}, {delta.high:+.1f}] | {own:.1f} | {share} |")
            print(f"{size}-player rounds done (load {' / '.join(f'{x:.2f}' for x in os.getloadavg())})",
                  file=sys.stderr)
    finally:
        gc.callbacks.remove(GC)
        for client in clients:
            client.close()
        for server in servers:
            server.stop()
    print(f"\nPhase one's handler with rating health on (A: HEALTH_WINDOW={args.window}) and off (B: 0), {args.rounds} "
          f"rounds per pass in batches of {args.batch}, a health flush every {args.flush_every} batches; {args.repeat} "
          f"A/B pairs (ABBA) interleaved with as many A/A pairs, interleaved by {args.interleave}; process CPU µs per "
          "round (phase one: its handler and health's flushes, with the garbage collections they triggered when "
          "interleaved by pass, without them by batch); intervals: "
          f"sign test, median of the pairs; load at end {' / '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print("| players/round | A: phase one µs/round | B: phase one µs/round | GC, A / B "
          "| phase two µs/round (not affected) | A/B: A / B - 1 [95 % CI] | A/A control | A - B µs/round [CI] "
          "| health's own µs/round | A - B as a share of the worker's CPU per round (µs) |")
    print("|---:|---:|---:|---|---:|---|---|---|---:|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
