"""Redis memory per player and per round, by key kind (what capacity planning needs).

Run by hand:  python bench/memory.py [--duels 10000] [--pool 1000] [--contests 200] [--contest-size 1000]

(a) ``--duels`` two-player rounds over a pool of ``--pool`` players, through the pipeline's own
    write path (phase one and phase two handlers, the emitted confirmation: what a worker writes),
    preset ``mmr`` (its history of factors is unbounded: a player's packed state grows 24 bytes
    per round played) and ``mmr-fast`` (history bound 100);
(b) a contest history (``--contests`` rounds of ``--contest-size`` from ``--contest-pool``
    players, the §6.1 generator) written by ``stream backfill`` (the same keys and bytes as the
    stream).
Each on a private redis-server; reports ``used_memory`` growth and ``MEMORY USAGE`` summed per
key kind, per player and per round, then the same after retention keeps no round results or
fan-outs (RETAIN_* = 1: only the round records stay).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stream.batch import synthetic_rounds  # noqa: E402
from stream.pipeline.backfill import backfill  # noqa: E402
from stream.pipeline.context import PipelineContext  # noqa: E402
from stream.pipeline.phase_one import handle_one  # noqa: E402
from stream.pipeline.messages import Incoming  # noqa: E402
from stream.pipeline.phase_two import handle_updates  # noqa: E402
from stream.settings import Settings  # noqa: E402
from stream.stack.redis_server import RedisServer  # noqa: E402
from stream.store import retention  # noqa: E402

KINDS = ("player", "history", "round", "round-results", "round-perf", "lb", "rounds", "other")


def kind_of(key: bytes) -> str:
    name = key.decode(errors="replace").removeprefix("ems:").split(":", 1)[0]
    return name if name in KINDS else "other"


def usage(client: redis.Redis) -> dict[str, int]:
    """MEMORY USAGE of every key, summed per kind."""
    out: dict[str, int] = defaultdict(int)
    keys = list(client.scan_iter(count=1000))
    for lo in range(0, len(keys), 1000):
        pipe = client.pipeline(transaction=False)
        for key in keys[lo:lo + 1000]:
            pipe.memory_usage(key, samples=0)
        for key, size in zip(keys[lo:lo + 1000], pipe.execute()):
            out[kind_of(key)] += int(size or 0)
    return dict(out)


def duels(count: int, pool: int, seed: int = 0) -> list[bytes]:
    rng = random.Random(seed)
    players = [f"player-{i:06d}" for i in range(pool)]
    out = []
    for i in range(count):
        a, b = rng.sample(players, 2)
        out.append(json.dumps({"round_id": f"duel-{i:07d}", "ladder": "duels", "occurred_at": 1.7e9 + 600.0 * i,
                               "standings": [{"player": a, "rank": 1}, {"player": b, "rank": 2}]}).encode())
    return out


async def stream_duels(settings: Settings, rounds: list[bytes]) -> None:
    ctx = PipelineContext.from_settings(settings)
    for raw in rounds:
        result = await handle_one(ctx, Incoming(raw))
        done = await handle_updates(ctx, [m.value for m in result.updates])
        await ctx.store.confirm_emitted(done.emitted)
    await ctx.store.close()


async def backfill_contests(settings: Settings, rounds: int, size: int, pool: int) -> None:
    ctx = PipelineContext.from_settings(settings)
    await backfill(ctx, list(synthetic_rounds(pool, rounds, size, 0)))
    await ctx.store.close()


async def trim_everything(settings: Settings) -> None:
    ctx = PipelineContext.from_settings(settings)
    await retention.trim(ctx.store, retention.policies(ctx.settings), now=time.time(), limit=10**9)
    await ctx.store.close()


def report(title: str, client: redis.Redis, used: int, players: int, rounds: int, participations: int) -> None:
    sizes = usage(client)
    per_player = sizes.get("player", 0) + sizes.get("history", 0) + sizes.get("lb", 0)
    per_round = sum(sizes.get(k, 0) for k in ("round", "round-results", "round-perf", "rounds"))
    print(f"\n{title}: {players:,} players, {rounds:,} rounds, {participations:,} participations")
    print("| key kind | MiB | bytes per player | bytes per round |")
    print("|---|---|---|---|")
    for kind in KINDS:
        if kind in sizes:
            print(f"| {kind} | {sizes[kind] / 2**20:.1f} | {sizes[kind] / players:,.0f} | {sizes[kind] / rounds:,.0f} |")
    print(f"| **player keys (state, history, leaderboard)** | {per_player / 2**20:.1f} | {per_player / players:,.0f} | |")
    print(f"| **round keys (record, results, fan-out, index)** | {per_round / 2**20:.1f} | | {per_round / rounds:,.0f} |")
    print(f"used_memory growth: {used / 2**20:.1f} MiB ({used / participations:,.0f} bytes per participation)")


def measure(title: str, server: RedisServer, fill: object, players: int, rounds: int, participations: int,
            settings: Settings) -> None:
    client = redis.Redis.from_url(server.url)
    client.flushall()
    before = int(client.info("memory")["used_memory"])
    asyncio.run(fill)  # type: ignore[arg-type]
    report(title, client, int(client.info("memory")["used_memory"]) - before, players, rounds, participations)
    trimmed = Settings(redis_url=server.url, retain_round_results=1, retain_fanouts=1)
    asyncio.run(trim_everything(trimmed))
    report(f"{title}, after RETAIN_ROUND_RESULTS=1 RETAIN_FANOUTS=1", client,
           int(client.info("memory")["used_memory"]) - before, players, rounds, participations)
    client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duels", type=int, default=10_000)
    parser.add_argument("--pool", type=int, default=1_000)
    parser.add_argument("--contests", type=int, default=200)
    parser.add_argument("--contest-size", type=int, default=1_000)
    parser.add_argument("--contest-pool", type=int, default=20_000)
    args = parser.parse_args()
    server = RedisServer().start()
    try:
        rounds = duels(args.duels, args.pool)
        seen = {p for r in rounds for p in (s["player"] for s in json.loads(r)["standings"])}
        for preset in ("mmr", "mmr-fast"):
            settings = Settings(redis_url=server.url, engine_preset=preset)
            measure(f"{args.duels:,} duels, preset {preset}, HISTORY_LENGTH={settings.history_length}", server,
                    stream_duels(settings, rounds), len(seen), args.duels, 2 * args.duels, settings)
        if args.contests <= 0:
            return
        settings = Settings(redis_url=server.url)
        contests = list(synthetic_rounds(args.contest_pool, args.contests, args.contest_size, 0))
        seen = {p for r in contests for p in r.players()}
        measure(f"contest history ({args.contests:,} rounds of {args.contest_size:,}, backfill), preset mmr", server,
                backfill_contests(settings, args.contests, args.contest_size, args.contest_pool), len(seen),
                args.contests, args.contests * args.contest_size, settings)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
