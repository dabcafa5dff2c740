"""Phase two of this tree against phase two at a git ref, on a random mixed workload: the same
batches on two fresh redis-servers, then the databases and the events compared.

A check, not a timing: a change to phase two's handler, its Store calls or their Lua scripts must
leave Redis exactly as the ref's code leaves it (every key and field but the wall-clock ones:
``tests/stream/redis_dump.py``) and emit the same events, batch for batch. The workload mixes what
phase two meets: two ladders sharing player ids, duels, small and 10-player lobbies, team rounds
with partial play, a small pool (a player in several rounds of a batch: chains), random batch
cuts over the partitions' streams, redelivered and out-of-order sections (already applied rows,
gaps), forged sections (not applied, reported), then a full redelivery until nothing is pending;
at the end both must also equal ``stream replay`` of the rounds.

Phase one (this tree's ``handle_rounds``, all rounds as one batch: a chained fan-out) seeds both
servers the same way, untimed.

Usage: python bench/compare_phase_two.py [--ref main] [--rounds 400] [--seed 1] [--pool 40] [--cluster-layout]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "stream"))

from handlers import Handler, file_at, module_at, mu_error  # noqa: E402
from redis_dump import differences, dump  # noqa: E402
from stream.contracts import RoundResult, Standing  # noqa: E402
from stream.pipeline.context import PipelineContext  # noqa: E402
from stream.pipeline.messages import Incoming  # noqa: E402
from stream.pipeline.phase_one import handle_rounds  # noqa: E402
from stream.pipeline.phase_two import handle_updates  # noqa: E402
from stream.settings import Settings  # noqa: E402
from stream.stack.redis_server import RedisServer  # noqa: E402
from stream.store.store import Store  # noqa: E402

PARTITIONS = 4
SIZES = (2, 2, 2, 2, 3, 5, 10)
TEAM_SHARE = 0.15


def mixed_rounds(count: int, pool: int, seed: int) -> list[RoundResult]:
    """Rounds over two ladders sharing player ids: duels, lobbies of 3 to 10, and team rounds
    (2 teams, some players playing a share of the match), times increasing."""
    rng = random.Random(seed)
    out = []
    for k in range(count):
        ladder = rng.choice(("alpha", "beta"))
        when = 1.7e9 + 60.0 * k
        if rng.random() < TEAM_SHARE:
            players = rng.sample(range(pool), 6)
            order = rng.sample((1, 2), 2)
            standings = [Standing(f"p{p}", order[i // 3], f"team{i // 3}",
                                  rng.uniform(0.2, 1.0) if rng.random() < 0.3 else 1.0)
                         for i, p in enumerate(players)]
        else:
            players = rng.sample(range(pool), rng.choice(SIZES))
            ranks = sorted(rng.randint(1, len(players)) for _ in players)  # ties included
            standings = [Standing(f"p{p}", rank) for p, rank in zip(players, ranks)]
        out.append(RoundResult(round_id=f"r{k}", ladder=ladder, occurred_at=when, standings=standings))
    return out


def deliveries(fanout: Sequence[tuple[int, bytes]], seed: int) -> list[list[bytes]]:
    """Batches of messages as a worker could get them: the partitions' streams interleaved and
    cut at random, some sections redelivered later, some held back (their players' later rows: gaps), some
    forged (a rank changed); then everything again, twice (the sweeper's re-sends)."""
    rng = random.Random(seed)
    streams: dict[int, list[bytes]] = {}
    for partition, value in fanout:
        streams.setdefault(partition, []).append(value)
    order: list[bytes] = []
    cursors = {p: 0 for p in streams}
    while cursors:
        p = rng.choice(sorted(cursors))
        order.append(streams[p][cursors[p]])
        cursors[p] += 1
        if cursors[p] == len(streams[p]):
            del cursors[p]
    for _ in range(len(order) // 20):  # held back: the player's later sections come first
        at = rng.randrange(len(order))
        order.insert(min(len(order), at + rng.randint(1, 80)), order.pop(at))
    for _ in range(len(order) // 20):
        at = rng.randrange(len(order))
        order.insert(rng.randrange(at, len(order) + 1), order[at])
    for _ in range(3):
        at = rng.randrange(len(order))
        order.insert(at, order[at].replace(b'"rank":', b'"rank":1', 1))  # another rank: not phase one's
    batches: list[list[bytes]] = []
    at = 0
    while at < len(order):
        size = rng.randint(1, 40)
        batches.append(order[at:at + size])
        at += size
    return batches + [list(order), list(order)]


def phase_two_at(ref: str, cluster: bool) -> tuple[Handler, Callable[[str], object]]:
    """``handle_updates`` at ``ref`` and a factory of its Store (store.py and Lua scripts at
    ``ref``), laid out as on a Redis Cluster with ``cluster``."""
    store = module_at(ref, "stream/store/store.py")
    store.source = lambda name: file_at(ref, f"stream/store/scripts/{name}.lua")  # type: ignore[attr-defined]
    history = Settings().history_length
    return (module_at(ref, "stream/pipeline/phase_two.py").handle_updates,
            lambda url: store.Store.from_url(url, history_length=history, cluster=cluster))


Result = tuple[list[tuple[bytes, bytes]], list[tuple[int, str]], int, int, int]


async def run(url: str, rounds: list[RoundResult], batches: list[list[bytes]] | None, handle: Handler,
              store: Callable[[str], object] | None) -> tuple[list[tuple[int, bytes]], list[Result]]:
    """Phase one of every round (one batch), then phase two of ``batches`` (default: the fan-out
    one message a batch) with ``handle`` and ``store``, each batch's emitted events confirmed as
    the agent does. Returns the fan-out and, per batch, what phase two returned."""
    settings = Settings(redis_url=url, partitions=PARTITIONS)
    ctx = PipelineContext.from_settings(settings)
    batch = await handle_rounds(ctx, [Incoming(r.to_json().encode()) for r in rounds])
    fanout = [(m.partition, m.value) for result in batch.results if result is not None for m in result.updates]
    if store is not None:
        await ctx.store.close()
        ctx = PipelineContext.from_settings(settings, store=store(url))  # type: ignore[arg-type]
    results: list[Result] = []
    for messages in batches if batches is not None else [[value] for _, value in fanout]:
        out: Any = await handle(ctx, messages)
        await ctx.store.confirm_emitted(out.emitted)
        results.append(([(e.key, e.value) for e in out.events], list(out.unverified), out.applied, out.replayed,
                        out.gaps))
    await ctx.store.close()
    return fanout, results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ref", default="main")
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--pool", type=int, default=40)
    parser.add_argument("--cluster-layout", action="store_true",
                        help="both Stores lay their calls out as on a Redis Cluster (one player per per-player call)")
    args = parser.parse_args()
    rounds = mixed_rounds(args.rounds, args.pool, args.seed)
    before, store_before = phase_two_at(args.ref, args.cluster_layout)
    history = Settings().history_length

    def store_after(url: str) -> Store:
        return Store.from_url(url, history_length=history, cluster=args.cluster_layout)

    server = RedisServer().start()  # the fan-out (phase one is this tree's for both)
    try:
        fanout, _ = asyncio.run(run(server.url, rounds, [], handle_updates, None))
    finally:
        server.stop()
    batches = deliveries(fanout, args.seed)
    dumps, outputs = [], []
    for name, handle, store in ((f"at {args.ref}", before, store_before), ("this tree", handle_updates, store_after)):
        server = RedisServer().start()
        try:
            seeded, results = asyncio.run(run(server.url, rounds, batches, handle, store))
            assert seeded == fanout, "phase one's fan-out differs between runs"
            client = redis.Redis.from_url(server.url)
            dumps.append(dump(client))
            client.close()
            outputs.append(results)
            error = mu_error(server.url, rounds)
        finally:
            server.stop()
        print(f"{name}: {len(batches)} batches, "
              f"{sum(r[2] for r in results)} applied, {sum(r[3] for r in results)} re-emitted, "
              f"{sum(len(r[1]) for r in results)} unverified, {sum(r[4] for r in results)} gap rows, "
              f"{len(dumps[-1])} keys, max abs(mu - replay) {error:.1e}")
        if error > 1e-9:
            print("FAIL: Redis differs from replay")
            return 1
    diff = differences(dumps[0], dumps[1])
    events = [i for i, (a, b) in enumerate(zip(*outputs)) if a != b]
    for line in diff:
        print("  ", line)
    if events:
        print(f"   results differ in batches {events[:10]}")
    print("FAIL" if diff or events else "identical: Redis contents and every batch's events and counts")
    return 1 if diff or events else 0


if __name__ == "__main__":
    raise SystemExit(main())
