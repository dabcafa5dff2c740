"""The pipeline's handlers without Kafka: phase one + phase two of every round against a private
redis-server, in one process, next to ``stream.batch.replay`` of the same rounds.

What the stream costs on top of the engine, apart from Faust and the broker: Redis round trips,
(de)serialisation, event encoding. Prints µs per participation (wall, the worker's CPU and
redis-server's CPU) and, with ``--profile``, the handlers' top functions (cProfile). With
``--compare-verify`` it also runs phase two without its fan-out check (``verify=False``), the
two modes alternating on fresh servers in the same run, and prints both (best of ``--repeat``).

Usage: python bench/handlers.py [--size 1000] [--rounds 40] [--pool 2000] [--partitions 4] [--profile]
                                [--compare-verify] [--repeat 2]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
import time
from pathlib import Path

import redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from redis_stats import command_rows, redis_commands, redis_cpu_s  # noqa: E402
from stream.batch.replay import replay  # noqa: E402
from stream.batch.synthetic import synthetic_rounds  # noqa: E402
from stream.engine import preset  # noqa: E402
from stream.pipeline.context import PipelineContext  # noqa: E402
from stream.pipeline.phase_one import handle_round  # noqa: E402
from stream.pipeline.phase_two import handle_updates  # noqa: E402
from stream.settings import Settings  # noqa: E402
from stream.stack.redis_server import RedisServer  # noqa: E402

PROFILE_ROWS = 30
REDIS_COMMANDS_SHOWN = 8


async def run(url: str, rounds: list, partitions: int, verify: bool = True) -> None:  # type: ignore[type-arg]
    ctx = PipelineContext.from_settings(Settings(redis_url=url, partitions=partitions))
    for r in rounds:
        result = await handle_round(ctx, r.to_json().encode())
        # phase two of the round's messages in one batch (a worker's batch holds ~1-10 messages)
        await handle_updates(ctx, [message.value for message in result.updates], verify=verify)
    await ctx.store.close()


def measure(rounds: list, partitions: int, verify: bool,  # type: ignore[type-arg]
            profiler: cProfile.Profile | None = None) -> tuple[float, float, float, dict[str, tuple[int, int]]]:
    """Wall, process CPU and redis-server CPU seconds of the handlers on a fresh server, and its commands."""
    profiler = cProfile.Profile() if args.profile else None
    modes = (False, True) if args.compare_verify else (True,)
    best: dict[bool, tuple[float, float, float]] = {}
    for _ in range(args.repeat if args.compare_verify else 1):
        for verify in modes:
            *figures, commands = measure(rounds, args.partitions, verify, profiler if verify else None)
            best[verify] = tuple(min(pair) for pair in zip(best.get(verify, figures), figures))  # type: ignore[assignment]
    per = 1e6 / participations
    print(f"\n{args.rounds} rounds of {args.size:,} players (pool {args.pool:,}), {participations:,} participations\n")
    if args.compare_verify:
        print(f"phase two without / with its fan-out check (best of {args.repeat}, alternating, same run)\n")
        print("| | µs/part. without check | µs/part. with check | change |\n|---|---:|---:|---:|")
        print(f"| replay (in process) | {replay_s * per:.1f} | | |")
        for i, name in enumerate(("wall", "process CPU", "redis-server CPU")):
            off, on = best[False][i] * per, best[True][i] * per
            print(f"| handlers: {name} | {off:.1f} | {on:.1f} | {100 * (on / off - 1):+.1f} % |")
    else:
        wall_s, cpu_s, redis_s = best[True]
        print("| | µs/part. |\n|---|---:|")
        print(f"| replay (in process) | {replay_s * per:.1f} |")
        print(f"| handlers: wall | {wall_s * per:.1f} |")
        print(f"| handlers: process CPU | {cpu_s * per:.1f} |")
        print(f"| handlers: redis-server CPU | {redis_s * per:.1f} |")
    print("\n| | Redis command | calls/part. | µs/part. |\n|---|---|---:|---:|")
    print("\n".join(command_rows("handlers", commands, participations, REDIS_COMMANDS_SHOWN)))
    if profiler:
        pstats.Stats(profiler).sort_stats(args.sort).print_stats(PROFILE_ROWS)


if __name__ == "__main__":
    main()
