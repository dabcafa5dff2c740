"""The pipeline's handlers without Kafka: phase one + phase two of every round against a private
redis-server, in one process, next to ``stream.batch.replay`` of the same rounds.

What the stream costs on top of the engine, apart from Faust and the broker: Redis round trips,
(de)serialisation, event encoding. Prints µs per participation (wall, the worker's CPU and
redis-server's CPU) and, with ``--profile``, the handlers' top functions (cProfile).

Usage: python bench/handlers.py [--size 1000] [--rounds 40] [--pool 2000] [--partitions 4] [--profile]
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
from stream.engine import preset, warm_up  # noqa: E402
from stream.pipeline.context import PipelineContext  # noqa: E402
from stream.pipeline.phase_one import handle_round  # noqa: E402
from stream.pipeline.phase_two import handle_updates  # noqa: E402
from stream.settings import Settings  # noqa: E402
from stream.stack.redis_server import RedisServer  # noqa: E402

PROFILE_ROWS = 30
REDIS_COMMANDS_SHOWN = 8


async def run(url: str, rounds: list, partitions: int) -> None:  # type: ignore[type-arg]
    ctx = PipelineContext.from_settings(Settings(redis_url=url, partitions=partitions))
    for r in rounds:
        result = await handle_round(ctx, r.to_json().encode())
        # phase two of the round's messages in one batch (a worker's batch holds ~1-10 messages)
        await handle_updates(ctx, [message.value for message in result.updates])
    await ctx.store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--pool", type=int, default=2000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--sort", default="tottime", help="cProfile sort key (tottime, cumulative)")
    args = parser.parse_args()
    rounds = list(synthetic_rounds(n_players=args.pool, n_rounds=args.rounds, round_size=args.size, seed=1,
                                   ladder="bench"))
    participations = sum(r.field_size for r in rounds)
    warm_up()  # the engine's compiled loops loaded before timing
    started = time.perf_counter()
    replay(rounds, preset(Settings().engine_preset), keep_rounds=False)
    replay_s = time.perf_counter() - started

    server = RedisServer().start()
    try:
        client = redis.Redis.from_url(server.url)
        client.config_resetstat()
        redis_before, cpu_before, started = redis_cpu_s(client), time.process_time(), time.perf_counter()
        profiler = cProfile.Profile() if args.profile else None
        if profiler:
            profiler.enable()
        asyncio.run(run(server.url, rounds, args.partitions))
        if profiler:
            profiler.disable()
        wall_s, cpu_s, redis_s = (time.perf_counter() - started, time.process_time() - cpu_before,
                                  redis_cpu_s(client) - redis_before)
        commands = redis_commands(client)
        client.close()
    finally:
        server.stop()
    per = 1e6 / participations
    print(f"\n{args.rounds} rounds of {args.size:,} players (pool {args.pool:,}), {participations:,} participations\n")
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
