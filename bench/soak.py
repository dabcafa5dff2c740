"""Soak: a mixed stream at a fixed rate for minutes on the embedded local stack, then the check.

Many small rounds (10 players drawn from a pool of 5,000, over 4 ladders) at ``--rate`` rounds
per second, plus one ``--large-size``-player round every ``--large-every`` seconds (its own
ladder, each sharing half its players with the previous one), for ``--duration`` seconds,
through ``--workers`` `stream worker` processes. Every second it samples the backlog (rounds
published but not yet rated, from Redis' per-ladder ``rounds_rated``). At the end it waits for
the stream to drain and reports: the sustained rate (participations rated per second of
publishing), backlog (max and at the end of publishing), drain time after the last publish,
peak RSS of each worker and of redis-server (VmHWM from /proc), and the equality check:
Redis equals ``stream.batch.replay`` of the same rounds within 1e-9 (mu, sigma, rounds).

Usage: python bench/soak.py [--duration 180] [--rate 10] [--large-every 15] [--large-size 2000]
Prints a Markdown summary (BENCHMARKS.md, soak section).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from stream.batch.replay import replay  # noqa: E402
from stream.contracts import Limits, parse_round  # noqa: E402
from stream.engine import preset  # noqa: E402
from stream.pipeline.topics import ensure  # noqa: E402
from stream.settings import Settings  # noqa: E402
from stream.stack.local import LocalStack  # noqa: E402
from stream.store import keys  # noqa: E402

SMALL_SIZE = 10
SMALL_POOL = 5_000
SMALL_LADDERS = ("soak-a", "soak-b", "soak-c", "soak-d")
LARGE_LADDER = "soak-large"
STARTUP_S = 8.0
DRAIN_TIMEOUT_S = 900.0
TOLERANCE = 1e-9
BASE_TIME = 1_700_000_000.0


def small_round(rng: random.Random, i: int) -> dict:
    players = rng.sample(range(SMALL_POOL), SMALL_SIZE)
    return {"round_id": f"s{i:06d}", "ladder": SMALL_LADDERS[i % len(SMALL_LADDERS)], "occurred_at": BASE_TIME + i,
            "standings": [{"player": f"u{p}", "rank": rank} for rank, p in enumerate(players, start=1)]}


def large_round(rng: random.Random, i: int, size: int) -> dict:
    start = i * size // 2  # half the players of the previous large round
    players = [f"L{p}" for p in range(start, start + size)]
    rng.shuffle(players)
    return {"round_id": f"L{i:04d}", "ladder": LARGE_LADDER, "occurred_at": BASE_TIME + i,
            "standings": [{"player": p, "rank": rank} for rank, p in enumerate(players, start=1)]}


def peak_rss_mb(pid: int) -> float:
    """Peak resident set size of a process (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def rated(client: redis.Redis) -> int:
    pipe = client.pipeline(transaction=False)
    for ladder in (*SMALL_LADDERS, LARGE_LADDER):
        pipe.hget(keys.ladder(ladder), "rounds_rated")
    return sum(int(v or 0) for v in pipe.execute())


def check_equal(client: redis.Redis, rounds: list[dict], engine_preset: str) -> tuple[int, float]:
    """Compare every player with replay; returns (players compared, largest |difference|)."""
    limits = Limits()
    result = replay([parse_round(r, limits=limits) for r in rounds], preset(engine_preset), keep_rounds=False)
    states = result.states()
    order = sorted(states)
    worst = 0.0
    for i in range(0, len(order), 5_000):
        chunk = order[i:i + 5_000]
        pipe = client.pipeline(transaction=False)
        for ladder, player in chunk:
            pipe.hmget(keys.player(ladder, player), ("mu", "sigma", "rounds"))
        for key, (mu, sigma, n) in zip(chunk, pipe.execute()):
            want = states[key]
            if mu is None or int(n) != want.rounds:
                raise AssertionError(f"{key}: missing or wrong round count in Redis")
            worst = max(worst, abs(float(mu) - want.mu), abs(float(sigma) - want.sigma))
    return len(order), worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=180.0, help="seconds of publishing")
    parser.add_argument("--rate", type=float, default=10.0, help="small rounds per second")
    parser.add_argument("--large-every", type=float, default=15.0, help="seconds between large rounds")
    parser.add_argument("--large-size", type=int, default=2_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=4)
    args = parser.parse_args()

    rng = random.Random(2026)
    with LocalStack() as stack:
        prefix = "soak-"
        env = {**os.environ, **stack.env(), "TOPIC_PREFIX": prefix, "APP_ID": "soak", "PARTITIONS": str(args.partitions),
               "LOG_LEVEL": "warning", "STACK_STATE_FILE": "/nonexistent"}
        settings = Settings.from_env(env)
        ensure(settings)
        logs = Path(tempfile.mkdtemp(prefix="soak-"))
        workers = [subprocess.Popen([sys.executable, "-m", "stream", "worker", "--no-web"], cwd=REPO, env=env,
                                    stdout=open(logs / f"worker{i}.log", "wb"), stderr=subprocess.STDOUT)
                   for i in range(args.workers)]
        client = redis.Redis.from_url(stack.redis_url)
        redis_pid = stack.redis.process.pid if stack.redis.process else 0
        from kafka import KafkaProducer

        kafka = KafkaProducer(bootstrap_servers=stack.bootstrap, linger_ms=5, max_request_size=64 * 1024 * 1024)
        time.sleep(STARTUP_S)
        rounds: list[dict] = []
        backlog_max = 0
        started = time.monotonic()
        next_large = started
        n_small = n_large = 0
        next_sample = started + 1.0
        while (now := time.monotonic()) < started + args.duration:
            due_small = int((now - started) * args.rate) + 1
            while n_small < due_small:
                rounds.append(small_round(rng, n_small))
                n_small += 1
                kafka.send(f"{prefix}rounds", key=rounds[-1]["ladder"].encode(), value=_json(rounds[-1]))
            if now >= next_large:
                rounds.append(large_round(rng, n_large, args.large_size))
                n_large += 1
                kafka.send(f"{prefix}rounds", key=LARGE_LADDER.encode(), value=_json(rounds[-1]))
                next_large += args.large_every
            if now >= next_sample:
                kafka.flush()
                backlog_max = max(backlog_max, len(rounds) - rated(client))
                next_sample += 1.0
            time.sleep(0.01)
        kafka.flush()
        published_s = time.monotonic() - started
        backlog_end = len(rounds) - rated(client)
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while rated(client) < len(rounds):
            if time.monotonic() > deadline or any(w.poll() is not None for w in workers):
                raise SystemExit(f"stream did not drain ({rated(client)}/{len(rounds)}); logs in {logs}")
            time.sleep(0.1)
        drain_s = time.monotonic() - started - published_s
        worker_rss = [peak_rss_mb(w.pid) for w in workers]
        redis_rss = peak_rss_mb(redis_pid)
        participations = sum(len(r["standings"]) for r in rounds)
        compared, worst = check_equal(client, rounds, settings.engine_preset)
        kafka.close()
        client.close()
        for w in workers:
            w.terminate()
            w.wait(timeout=30)

    print(f"| publishing | rounds (small + large) | participations | sustained part./s | backlog max | "
          f"backlog at end | drain after | worker peak RSS | redis peak RSS | equality |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    print(f"| {published_s:.0f} s | {len(rounds):,} ({n_small:,} + {n_large}) | {participations:,} | "
          f"{participations / (published_s + drain_s):,.0f} | {backlog_max} rounds | {backlog_end} rounds | "
          f"{drain_s:.1f} s | {' / '.join(f'{r:.0f} MiB' for r in worker_rss)} | {redis_rss:.0f} MiB | "
          f"{compared:,} players, max diff {worst:.1e} {'OK' if worst <= TOLERANCE else 'FAILED'} |")


def _json(r: dict) -> bytes:
    import json

    return json.dumps(r).encode()


if __name__ == "__main__":
    main()
