"""What-if latency: ``POST /api/ladders/{ladder}/what-if`` of an N-player round, served by a
``stream api`` process of its own over a redis-server holding N rated players.

The ladder's players are rated in process first (``stream.batch.replay`` of ``--rounds`` rounds of
all N players) and their packed states and tiers written to Redis as the pipeline stores them;
then ``--repeat`` what-if requests of a fresh permutation of all N players (a new round, a
month after the last) are sent one at a time. Reported: the answer's ``server_ms`` (from the
request's first byte read to the answer built, in the API process: body read, parse, the one
Redis read, rating, JSON) as min / median / max, the client's wall time per request, the API
process's CPU per request (its user + system time from ``/proc/<pid>/stat`` around each request:
the whole request, HTTP and JSON included; the requests are sent one at a time), and, with
``--explain K``, the same with tier targets for K players. Redis has load_players.lua cached, as
a running worker leaves it (what-if then reads by EVALSHA_RO; ``--no-scripts``: by HMGETs, as
when the API's Redis user may run no scripts).

Then the same request's stages in this process (``pipeline.whatif``: parse, the Redis read, rating,
the answer, its JSON), each as wall and CPU milliseconds (median): CPU time does not count the
time the process waits for a core, so on a loaded machine it tells what the request costs.

Usage: python bench/whatif.py [--players 10000] [--rounds 3] [--repeat 10] [--explain 1]
Prints Markdown tables (BENCHMARKS.md, "What-if").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from stream import engine  # noqa: E402
from stream.batch.replay import replay  # noqa: E402
from stream.contracts import RoundResult  # noqa: E402
from stream.contracts.round import Standing  # noqa: E402
from stream.engine.display import DisplayConfig, next_tier, tier_names, UNPLACED  # noqa: E402
from stream.engine.state import pack_batch  # noqa: E402
from stream.stack.ports import free_port, wait_for_port  # noqa: E402
from stream.stack.redis_server import RedisServer  # noqa: E402
from stream.store import keys  # noqa: E402
from stream.store.scripts import source  # noqa: E402

LADDER = "bench"
START = 1_700_000_000.0
DAY = 86_400.0


def seed(url: str, players: list[str], rounds: int, scripts: bool = True) -> None:
    """Rate ``rounds`` rounds of every player in process and store the states as the pipeline does."""
    rng = np.random.default_rng(0)
    played = [RoundResult(round_id=f"s{t}", ladder=LADDER, occurred_at=START + t * DAY,
                          standings=[Standing(p, i + 1) for i, p in enumerate(rng.permutation(players).tolist())])
              for t in range(rounds)]
    states = replay(played, engine.preset("mmr"), keep_rounds=False).states()
    cfg = DisplayConfig()
    client = redis.Redis.from_url(url)
    pipe = client.pipeline(transaction=False)
    pipe.sadd(keys.ladders(), LADDER)
    pipe.hset(keys.ladder(LADDER), mapping={"seq": rounds, "rounds_rated": rounds, "updated_at": repr(START)})
    names = [p for _, p in states]
    mu = np.array([s.mu for s in states.values()])
    sigma = np.array([s.sigma for s in states.values()])
    tiers = tier_names(next_tier(np.full(len(names), UNPLACED), mu, sigma, cfg), cfg)
    for (_, p), s, tier in zip(states.items(), states.values(), tiers):
        blob = pack_batch(engine.PlayerBatch.from_states([s]))[0]
        pipe.hset(keys.player(LADDER, p), mapping={"state": blob, "tier": tier, "last_seq": rounds,
                                                   "mu": repr(s.mu), "sigma": repr(s.sigma), "rounds": s.rounds})
    pipe.execute()
    if scripts:  # as a running worker leaves it: what-if then reads by EVALSHA_RO (Store.read_states)
        client.script_load(source("load_players"))
    client.close()


def process_cpu_ms(pid: int) -> float:
    """User + system CPU milliseconds of process ``pid`` so far (``/proc/<pid>/stat``, clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def stages(url: str, players: list[str], repeat: int) -> str:
    """Median wall / CPU ms of each stage of a what-if request, in this process (module docstring)."""
    import asyncio

    import orjson
    import redis.asyncio as aioredis

    from stream.contracts.round import Limits
    from stream.engine.ladders import parse_ladders
    from stream.pipeline import whatif

    cfg = parse_ladders("", engine_preset="mmr").of(LADDER)
    names = ["parse", "redis read", "rate", "answer", "json"]
    walls: dict[str, list[float]] = {n: [] for n in names}
    cpus: dict[str, list[float]] = {n: [] for n in names}

    async def go() -> None:
        client = aioredis.Redis.from_url(url)
        rng = np.random.default_rng(2)
        for k in range(repeat + 1):
            order = rng.permutation(players).tolist()
            raw = json.dumps({"occurred_at": START + 40 * DAY,
                              "standings": [{"player": p, "rank": i + 1} for i, p in enumerate(order)]}).encode()
            marks = [(time.perf_counter(), time.process_time())]
            round_, _ = whatif.read_request(raw, LADDER, Limits(), 0.0)
            marks.append((time.perf_counter(), time.process_time()))
            stored = await whatif.load(client, LADDER, round_.players())
            marks.append((time.perf_counter(), time.process_time()))
            rows = whatif.rate(cfg, round_, stored)
            marks.append((time.perf_counter(), time.process_time()))
            answer = whatif.answer(cfg, round_, rows, [], cfg.display.interval_z)
            marks.append((time.perf_counter(), time.process_time()))
            orjson.dumps(answer)
            marks.append((time.perf_counter(), time.process_time()))
            if k:  # the first warms up
                for name, (w0, c0), (w1, c1) in zip(names, marks, marks[1:]):
                    walls[name].append((w1 - w0) * 1000)
                    cpus[name].append((c1 - c0) * 1000)
        await client.aclose()

    asyncio.run(go())
    lines = ["| stage | wall ms (median) | CPU ms (median) |", "|---|---:|---:|"]
    lines += [f"| {n} | {statistics.median(walls[n]):.0f} | {statistics.median(cpus[n]):.0f} |" for n in names]
    lines.append(f"| total | {sum(statistics.median(walls[n]) for n in names):.0f} | "
                 f"{sum(statistics.median(cpus[n]) for n in names):.0f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--explain", type=int, default=1, help="also time requests with tier targets for K players")
    parser.add_argument("--no-scripts", action="store_true", help="no load_players.lua cached: the HMGET read")
    args = parser.parse_args()
    players = [f"player-{i:06d}" for i in range(args.players)]
    server = RedisServer().start()
    api = None
    try:
        seed(server.url, players, args.rounds, scripts=not args.no_scripts)
        port = free_port()
        env = dict(os.environ, REDIS_URL=server.url, ENGINE_PRESET="mmr", LOG_LEVEL="warning",
                   PYTHONPATH=str(REPO))
        api = subprocess.Popen([sys.executable, "-m", "stream", "api", "--host", "127.0.0.1", "--port", str(port)],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(port, 60.0)
        url = f"http://127.0.0.1:{port}/api/ladders/{LADDER}/what-if"
        rng = np.random.default_rng(1)
        rows = []
        for explain in sorted({0, args.explain}):
            server_ms, wall_ms, cpu_ms = [], [], []
            for k in range(args.repeat + 1):  # the first request warms the compiled kernels up: not counted
                order = rng.permutation(players).tolist()
                body = {"occurred_at": START + 40 * DAY, "standings": [{"player": p, "rank": i + 1} for i, p in enumerate(order)],
                        "explain_for": order[len(order) // 3: len(order) // 3 + explain]}
                data = json.dumps(body).encode()
                cpu_before = process_cpu_ms(api.pid)
                started = time.perf_counter()
                request = urllib.request.Request(url, data=data, method="POST",
                                                 headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(request, timeout=600) as reply:
                    answer = json.loads(reply.read())
                wall = (time.perf_counter() - started) * 1000
                cpu = process_cpu_ms(api.pid) - cpu_before
                assert len(answer["changes"]) == len(players) and len(answer["targets"]) == explain
                if k:
                    server_ms.append(answer["server_ms"])
                    wall_ms.append(wall)
                    cpu_ms.append(cpu)
            rows.append((explain, server_ms, wall_ms, cpu_ms))
        print(f"what-if of a {args.players:,}-player round ({args.repeat} requests each, load average "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)\n")
        print("| tier targets asked | server ms min / median / max | client wall ms median "
              "| API process CPU ms per request: mean (min / max) |")
        print("|---:|---:|---:|---:|")
        for explain, server_ms, wall_ms, cpu_ms in rows:
            print(f"| {explain} | {min(server_ms):.0f} / {statistics.median(server_ms):.0f} / {max(server_ms):.0f} | "
                  f"{statistics.median(wall_ms):.0f} | **{statistics.mean(cpu_ms):.0f}** "
                  f"({min(cpu_ms):.0f} / {max(cpu_ms):.0f}) |")
        print()
        print(stages(server.url, players, args.repeat))
    finally:
        if api is not None:
            api.terminate()
            api.wait()
        server.stop()


if __name__ == "__main__":
    main()
