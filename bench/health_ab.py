"""Rating health's CPU, same-run A/B through the handlers in process (no Kafka, no Faust).

Phase one (``handle_rounds`` in batches of ``--batch``) then the batch's phase two, against a
private redis-server, for duels and 10-player lobbies (bench/workloads.py), with rating health on
(HEALTH_WINDOW 500, flushed at the end inside the timing) and off (0), alternating on fresh
servers ``--repeat`` times, each pair's order the previous one's reversed. Prints this process's CPU per participation (the handlers' work,
Redis client included; the worker's Faust and Kafka work is not in it, so the overhead here is an
upper bound of the overhead on the worker's CPU) and the overhead on / off - 1; and the share of
the "on" runs' CPU that rating health's own code took (``RatingHealth.cpu_s``: thread CPU time in
its scoring, the same figure a worker exports as ``ems_rating_health_cpu_seconds_total``), which
does not move with the machine's load as a difference of two runs does.

Usage: python bench/health_ab.py [--rounds 3000] [--batch 64] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from workloads import make_rounds  # noqa: E402

from stream.pipeline.context import PipelineContext  # noqa: E402
from stream.pipeline.messages import Incoming, Origin  # noqa: E402
from stream.pipeline.outbox import TopicNames  # noqa: E402
from stream.pipeline.phase_one import handle_rounds  # noqa: E402
from stream.pipeline.updates_batches import phase_two_batch  # noqa: E402
from stream.settings import Settings  # noqa: E402
from stream.stack.redis_server import RedisServer  # noqa: E402

NAMES = TopicNames(player_updates="player-updates", rating_changes="rating-changes", rounds_dlq="rounds-dlq")


async def run(url: str, rounds: list, batch: int, window: int) -> tuple[float, float]:
    """CPU seconds of this process to rate ``rounds`` through the handlers, and of rating health's code."""
    ctx = PipelineContext.from_settings(Settings(redis_url=url, partitions=4, health_window=window))
    events = [Incoming(r.to_json().encode()) for r in rounds]

    async def send(records, what):  # type: ignore[no-untyped-def]
        pass

    started = time.process_time()
    for a in range(0, len(events), batch):
        result = await handle_rounds(ctx, events[a:a + batch])
        await phase_two_batch(ctx, NAMES, [Incoming(m.value, m.key, Origin("player-updates", m.partition, i))
                                           for i, m in enumerate(result.messages)], send)
    await ctx.health.flush(ctx.store.client, force=True)
    spent = time.process_time() - started
    await ctx.store.close()
    return spent, ctx.health.cpu_s


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print("| players/round | health on: CPU µs/part. | off | overhead (median of pairs) | pairs "
          "| health's own CPU: µs/part., share of the on runs' CPU (median) |")
    print("|---:|---:|---:|---:|---|---:|")
    for size in (2, 10):
        rounds = make_rounds(size, args.rounds, f"h{size}", seed=size, ladders=2)
        parts = sum(r.field_size for r in rounds)
        on: list[float] = []
        off: list[float] = []
        own: list[tuple[float, float]] = []
        for k in range(args.repeat):  # on first, then off first (ABBA): neither is always the warm one
            for window, out in ((500, on), (0, off))[::1 if k % 2 == 0 else -1]:
                server = RedisServer().start()
                try:
                    spent, health = asyncio.run(run(server.url, rounds, args.batch, window))
                    out.append(spent / parts * 1e6)
                    if window:
                        own.append((health / parts * 1e6, health / spent))
                finally:
                    server.stop()
        pairs = [a / b - 1 for a, b in zip(on, off)]
        print(f"| {size} | {statistics.median(on):.1f} | {statistics.median(off):.1f} "
              f"| **{statistics.median(pairs):+.1%}** | {', '.join(f'{p:+.1%}' for p in pairs)} "
              f"| {statistics.median(u for u, _ in own):.1f} µs, **{statistics.median(f for _, f in own):.1%}** |")


if __name__ == "__main__":
    main()
