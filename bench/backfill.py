"""Backfill benchmark: ``stream backfill`` of a contest history next to ``stream replay`` of it.

Run by hand:  python bench/backfill.py [--rounds 1000] [--round-size 1000] [--players 20000]

Writes a synthetic contest history (the paper's §6.1 generator: a fixed player pool, every round
a random subset; ``generate-synthetic`` sizes) to a JSONL file, then times, in the same run,
each command as a subprocess (wall time, Python start-up included on both sides):
``stream replay FILE --output ratings.csv`` (the in-process reference) and ``stream backfill
FILE`` into a private redis-server on a free port (flushed before each repetition). Prints the
best of ``--repeat`` runs of each and the ratio backfill / replay, and the Redis memory the
backfilled history takes (``used_memory`` after minus before).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stream.batch import synthetic_rounds, write_jsonl  # noqa: E402
from stream.stack.redis_server import RedisServer  # noqa: E402


def timed(args: list[str], env: dict[str, str]) -> tuple[float, dict[str, object]]:
    """Wall seconds of ``python -m stream <args> --json`` and its JSON summary."""
    started = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "stream", *args, "--json"], capture_output=True, text=True, env=env,
                         check=False)
    elapsed = time.perf_counter() - started
    if run.returncode != 0:
        raise SystemExit(f"stream {' '.join(args)} failed ({run.returncode}):\n{run.stderr}")
    return elapsed, json.loads(run.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1_000)
    parser.add_argument("--round-size", type=int, default=1_000)
    parser.add_argument("--players", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--history-length", type=int, default=100)
    args = parser.parse_args()
    server = RedisServer().start()
    try:
        run_bench(args, server)
    finally:
        server.stop()


def run_bench(args: argparse.Namespace, server: RedisServer) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "history.jsonl"
        write_jsonl(synthetic_rounds(args.players, args.rounds, args.round_size, 0), path)
        env = dict(os.environ, REDIS_URL=server.url, HISTORY_LENGTH=str(args.history_length))
        client = redis.Redis.from_url(server.url)
        replays, backfills = [], []
        summary: dict[str, object] = {}
        memory = 0
        for _ in range(args.repeat):
            replays.append(timed(["replay", str(path), "--output", str(Path(tmp) / "ratings.csv")], env)[0])
            client.flushall()
            before = int(client.info("memory")["used_memory"])
            elapsed, summary = timed(["backfill", str(path)], env)
            backfills.append(elapsed)
            memory = int(client.info("memory")["used_memory"]) - before
        client.close()
    participations = int(summary["participations"])  # type: ignore[call-overload]
    best_replay, best_backfill = min(replays), min(backfills)
    print(f"contest history: {args.rounds:,} rounds of {args.round_size:,} from {args.players:,} players "
          f"({participations:,} participations), HISTORY_LENGTH={args.history_length}, best of {args.repeat}")
    print("| command | wall s | participations/s |")
    print("|---|---|---|")
    print(f"| stream replay | {best_replay:.2f} | {participations / best_replay:,.0f} |")
    print(f"| stream backfill | {best_backfill:.2f} | {participations / best_backfill:,.0f} |")
    print(f"backfill / replay: {best_backfill / best_replay:.2f}x")
    print(f"Redis used_memory of the backfilled history: {memory / 2**20:.1f} MiB "
          f"({memory / max(participations, 1):.0f} bytes per participation)")


if __name__ == "__main__":
    main()
