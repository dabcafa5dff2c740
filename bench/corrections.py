"""Corrections benchmark: a void deep in a long duel ladder re-rated, next to ``stream replay`` of it.

Run by hand:  python bench/corrections.py [--rounds 100000] [--players 2000] [--depth 0.1]

A ladder of ``--rounds`` duels (``match_rounds``: a pool of ``--players``) is backfilled into a
private redis-server on a free port (``stream backfill``'s code path: the state the stream would
have written). Then, in the same run:

* ``stream replay FILE`` of the history as a subprocess (wall time, Python start-up included) and
  ``stream.batch.replay`` of it in process (the engine's time for the whole ladder);
* the correction handler (``stream.pipeline.corrections``, what the worker's agent runs, without
  Kafka) voiding the round at ``--depth`` of the history (0.1: round 10,000 of 100,000, so 90% of
  the ladder is re-rated and rewritten), then voiding one of the last rounds (``--shallow``): its
  wall time split into hold, reading the ladder, re-rate (engine) and writing;
* then the ladder is switched to ``occurred_at`` order (LADDER_ORDER; its ``occurred_max`` set to
  its newest round's) and a late duel older than the round at ``--depth`` is published to phase
  one: it is registered ``late`` and its ``insert`` correction timed the same way (late rounds
  take the corrections' path).

Afterwards every player's mu and sigma in Redis are checked against the replay of the corrected
history (within 1e-9): the figures are of a correct re-rate.

Besides wall time, each correction's CPU time is printed: this process's (``time.process_time``)
and the redis-server's (``INFO cpu``), which a shared machine's load does not inflate as much.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stream import engine  # noqa: E402
from stream.batch import replay, write_jsonl  # noqa: E402
from stream.batch.profiles import match_rounds  # noqa: E402
from stream.pipeline.backfill import backfill  # noqa: E402
from stream.pipeline.context import PipelineContext  # noqa: E402
from stream.contracts import RoundResult, Standing  # noqa: E402
from stream.pipeline.corrections import CorrectionResult, finish_correction, handle_correction  # noqa: E402
from stream.pipeline.phase_one import handle_one  # noqa: E402
from stream.pipeline.messages import Incoming  # noqa: E402
from stream.settings import Settings  # noqa: E402
from stream.stack.redis_server import RedisServer  # noqa: E402
from stream.store import keys  # noqa: E402

LADDER = "duels"
TOLERANCE = 1e-9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=100_000)
    parser.add_argument("--players", type=int, default=2_000)
    parser.add_argument("--depth", type=float, default=0.1, help="where the voided round is (fraction of the history)")
    parser.add_argument("--shallow", type=int, default=10, help="then void the round this many from the end")
    parser.add_argument("--preset", default=Settings.engine_preset)
    args = parser.parse_args()
    server = RedisServer().start()
    try:
        asyncio.run(run_bench(args, server))
    finally:
        server.stop()


async def run_bench(args: argparse.Namespace, server: RedisServer) -> None:
    rounds = list(match_rounds(args.players, args.rounds, 2, seed=0, ladder=LADDER))
    settings = Settings(redis_url=server.url, engine_preset=args.preset, hold_poll_s=0.01)
    ctx = PipelineContext.from_settings(settings)
    engine.warm_up()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "duels.jsonl"
        write_jsonl(rounds, path)
        started = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "stream", "replay", str(path), "--preset", args.preset,
                              "--output", str(Path(tmp) / "ratings.csv")], capture_output=True, text=True, check=False)
        replay_cli = time.perf_counter() - started
        if run.returncode != 0:
            raise SystemExit(f"stream replay failed:\n{run.stderr}")
    started, cpu = time.perf_counter(), time.process_time()
    replay(rounds, ctx.ladders.fallback.elo_mmr, keep_rounds=False)
    replay_in_process, replay_cpu = time.perf_counter() - started, time.process_time() - cpu
    started = time.perf_counter()
    await backfill(ctx, rounds)
    backfill_s = time.perf_counter() - started

    deep = rounds[int(args.depth * len(rounds))]
    shallow = rounds[-args.shallow]
    results: list[tuple[str, float, float, float, CorrectionResult]] = []
    voided = set()
    for name, target in (("deep", deep), ("shallow", shallow)):
        message = json.dumps({"kind": "void", "ladder": LADDER, "round_id": target.round_id}).encode()
        cpu, redis_cpu = time.process_time(), await server_cpu(ctx)
        started = time.perf_counter()
        result = await handle_correction(ctx, message)
        await finish_correction(ctx, result)
        wall = time.perf_counter() - started
        results.append((name, wall, time.process_time() - cpu, await server_cpu(ctx) - redis_cpu, result))
        assert result.outcome == "applied", result
        voided.add(target.round_id)
    late_ctx = PipelineContext.from_settings(Settings(redis_url=server.url, engine_preset=args.preset, hold_poll_s=0.01,
                                                      ladder_order=json.dumps({LADDER: "occurred_at"})))
    await late_ctx.store.client.hset(keys.ladder(LADDER), "occurred_max", repr(rounds[-1].occurred_at))
    late = RoundResult(round_id="late-1", ladder=LADDER, occurred_at=deep.occurred_at - 1.0,
                       standings=[Standing(p, r) for p, r in zip(deep.players(), (1, 2))])
    registered = await handle_one(late_ctx, Incoming(late.to_json().encode()))
    assert registered.outcome == "late" and registered.insert is not None, registered
    cpu, redis_cpu = time.process_time(), await server_cpu(ctx)
    started = time.perf_counter()
    result = await handle_correction(late_ctx, registered.insert.to_json().encode())
    await finish_correction(late_ctx, result)
    wall = time.perf_counter() - started
    assert result.outcome == "applied", result
    results.append(("late", wall, time.process_time() - cpu, await server_cpu(ctx) - redis_cpu, result))
    await late_ctx.store.close()
    corrected = sorted([r for r in rounds if r.round_id not in voided] + [late], key=lambda r: r.occurred_at)
    checked = await check(ctx, corrected)
    await ctx.store.close()

    load = open("/proc/loadavg").read().split()[:3]
    print(f"{args.rounds:,} duels from {args.players:,} players, preset {args.preset}; load average {' '.join(load)}")
    print("| what | wall s | CPU s (this process + redis-server) |")
    print("|---|---|---|")
    print(f"| `stream replay` of the ladder (subprocess, start-up included) | {replay_cli:.2f} | |")
    print(f"| `stream.batch.replay` of the ladder (in process) | {replay_in_process:.2f} | {replay_cpu:.2f} |")
    print(f"| backfill of the ladder (setup) | {backfill_s:.2f} | |")
    for name, wall, cpu, redis_cpu, result in results:
        position = shallow if name == "shallow" else deep
        index = rounds.index(position)
        steps = ", ".join(f"{k} {v:.2f}" for k, v in result.seconds.items())
        what = (f"insert of a late duel before round {index + 1:,} ({len(rounds) - index:,} later rounds)"
                if name == "late" else f"void of round {index + 1:,} ({name}: {len(rounds) - index - 1:,} later rounds)")
        print(f"| {what}, {len(result.events):,} events | {wall:.2f} ({steps}) | {cpu:.2f} + {redis_cpu:.2f} |")
    print(f"Redis == replay of the corrected history for all {checked:,} players (1e-9)")


async def server_cpu(ctx: PipelineContext) -> float:
    """CPU seconds the redis-server has used (user + system, ``INFO cpu``)."""
    info = await ctx.store.client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


async def check(ctx: PipelineContext, corrected: list) -> int:
    """Every player's stored mu and sigma equal the replay of the corrected history (TOLERANCE)."""
    states = replay(corrected, ctx.ladders.fallback.elo_mmr, keep_rounds=False).states()
    pipe = ctx.store.client.pipeline(transaction=False)
    order = sorted(states)
    for ladder, player in order:
        pipe.hmget(keys.player(ladder, player), ["mu", "sigma"])
    for (ladder, player), (mu, sigma) in zip(order, await pipe.execute()):
        want = states[(ladder, player)]
        if abs(float(mu) - want.mu) > TOLERANCE or abs(float(sigma) - want.sigma) > TOLERANCE:
            raise SystemExit(f"{ladder}/{player}: Redis {float(mu)}, {float(sigma)} != replay {want.mu}, {want.sigma}")
    stored = await ctx.store.client.zcard(keys.leaderboard(LADDER))
    if stored != len(states):
        raise SystemExit(f"{stored} players in the leaderboard, replay has {len(states)}")
    return len(states)


if __name__ == "__main__":
    main()
