"""A season start on a big ladder costs nothing up front: the soft reset is lazy.

A private redis-server holds a ladder of ``--players`` rated players (written with the store's bulk
writer, ``LadderWriter.players``, as a backfill writes them; their states are copies of a few
hundred players rated through a first season). Then:

1. ``stream season start LADDER --at T`` (in process, on a LADDERS file): process CPU, and the
   Redis commands and memory it costs (none: a season is a schedule in the configuration);
2. ``--rounds`` duels of random players after T through the pipeline's handlers (phase one in
   batches of 64, then the batch's phase two, as the agents run them), every player's first
   round of the new season, so each one is soft-reset: process CPU and redis-server CPU per
   round, next to the same rounds on the same ladder without seasons (fresh servers, modes
   alternating, best of ``--repeat``);
3. for scale, what an eager reset would cost: the bulk write of every player's hash (the setup's
   own write of the ladder, timed).

Usage: python bench/seasons.py [--players 1000000] [--rounds 2000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from redis_stats import redis_cpu_s  # noqa: E402
from stream.contracts import RoundResult, Standing  # noqa: E402
from stream.engine import PlayerBatch, RoundSpec, preset, rate_rounds, warm_up  # noqa: E402
from stream.engine.display import DisplayConfig, display_rating, next_tier, tier_names  # noqa: E402
from stream.engine.season_schedule import iso_time  # noqa: E402
from stream.engine.state import pack_batch  # noqa: E402
from stream.pipeline.context import PipelineContext  # noqa: E402
from stream.pipeline.messages import Incoming  # noqa: E402
from stream.pipeline.outbox import TopicNames  # noqa: E402
from stream.pipeline.phase_one import handle_rounds  # noqa: E402
from stream.pipeline.updates_batches import phase_two_batch  # noqa: E402
from stream.settings import Settings  # noqa: E402
from stream.stack.redis_server import RedisServer  # noqa: E402
from stream.store import keys  # noqa: E402
from stream.store.bulk import PLAYER_FIELDS, LadderWriter  # noqa: E402
from stream.store.store import Store  # noqa: E402

LADDER = "big"
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z: the first season's rounds
START = T0 + 90 * 86_400.0  # the new season
TEMPLATES = 500
NAMES = TopicNames(player_updates="player-updates", rating_changes="rating-changes", rounds_dlq="rounds-dlq")
SEASONS = {"sigma_to": 250.0, "sigma_share": 0.5, "mu_pull": 0.2}


def template_rows() -> list[list[object]]:
    """The player-hash rows of TEMPLATES players rated through 40 rounds each of the first season."""
    params = preset("mmr-bounded")
    rng = np.random.default_rng(7)
    specs = [RoundSpec(players=rng.permutation(TEMPLATES)[:8], ranks=np.arange(8), time=T0 + k * 600.0)
             for k in range(TEMPLATES * 40 // 8)]
    after = rate_rounds(PlayerBatch.new(TEMPLATES, params), specs, params).after
    cfg = DisplayConfig()
    shown = display_rating(after.mu, after.sigma, cfg)
    tiers = tier_names(next_tier(np.full(TEMPLATES, -1), after.mu, after.sigma, cfg), cfg)
    states = pack_batch(after)
    return [[0, 0, repr(float(after.mu[i])), repr(float(after.sigma[i])), int(after.rounds[i]), "", repr(float(after.last_time[i])),
             repr(float(shown[i])), tiers[i], states[i]] for i in range(TEMPLATES)]


async def write_ladder(url: str, players: int, rows: list[list[object]]) -> float:
    """Bulk-write the ladder's players (each a copy of a template row); returns process CPU seconds."""
    assert PLAYER_FIELDS == ("last_seq", "queued_seq", "mu", "sigma", "rounds", "last_round", "last_time",
                             "display_rating", "tier", "state")
    store = Store.from_url(url, history_length=Settings().history_length)
    cpu = time.process_time()
    writer = LadderWriter(store)
    await writer.add_ladder(LADDER)
    chunk = 50_000
    for lo in range(0, players, chunk):
        names = [f"p{i:07d}" for i in range(lo, min(players, lo + chunk))]
        await writer.players(LADDER, names, [rows[i % TEMPLATES] for i in range(lo, lo + len(names))])
    await writer.close()
    spent = time.process_time() - cpu
    await store.close()
    return spent


def season_start(path: Path) -> tuple[float, dict[str, object]]:
    """``stream season start`` in process on the LADDERS file: (process CPU s, the new LADDERS)."""
    from typer.testing import CliRunner

    from stream.cli.main import app

    runner = CliRunner()
    cpu = time.process_time()
    result = runner.invoke(app, ["season", "start", LADDER, "--at", iso_time(START), "--backdate", "--ladders",
                                 str(path)])
    spent = time.process_time() - cpu
    assert result.exit_code == 0, result.output
    return spent, json.loads(path.read_text())


def duels(players: int, count: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    for k in range(count):
        a, b = rng.sample(range(players), 2)
        out.append(RoundResult(round_id=f"d{k}", ladder=LADDER, occurred_at=START + 60.0 + k,
                               standings=[Standing(f"p{a:07d}", 1), Standing(f"p{b:07d}", 2)]).to_json().encode())
    return out


async def rate(url: str, ladders: str, raws: list[bytes]) -> float:
    """Phase one (batches of 64) and phase two of the rounds; returns process CPU seconds."""
    ctx = PipelineContext.from_settings(Settings(redis_url=url, partitions=4, ladders=ladders))

    async def send(records: list, what: str) -> None:  # type: ignore[type-arg]
        pass

    cpu = time.process_time()
    for lo in range(0, len(raws), 64):
        batch = await handle_rounds(ctx, [Incoming(raw) for raw in raws[lo:lo + 64]])
        await phase_two_batch(ctx, NAMES, [Incoming(m.value) for m in batch.messages], send)
    spent = time.process_time() - cpu
    await ctx.store.close()
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    warm_up()
    rows = template_rows()
    raws = duels(args.players, args.rounds, seed=32)
    best: dict[str, tuple[float, float]] = {}
    start_cpu, write_cpu = [], []
    sigma_after: dict[str, float] = {}
    for _ in range(args.repeat):
        for mode in ("seasons", "none"):
            server = RedisServer().start()
            try:
                client = redis.Redis.from_url(server.url)
                write_cpu.append(asyncio.run(write_ladder(server.url, args.players, rows)))
                ladders: dict[str, object] = {LADDER: {"model": "mmr-bounded"}}
                if mode == "seasons":
                    with tempfile.TemporaryDirectory() as tmp:
                        path = Path(tmp) / "ladders.json"
                        path.write_text(json.dumps({LADDER: {"model": "mmr-bounded", "seasons": SEASONS}}))
                        calls = client.info("stats")["total_commands_processed"]
                        memory = client.info("memory")["used_memory"]
                        spent, ladders = season_start(path)
                        start_cpu.append(spent)
                        # INFO itself is a command: the season start sent none
                        assert client.info("stats")["total_commands_processed"] - calls <= 2
                        assert client.info("memory")["used_memory"] - memory < 64 * 1024
                redis_before = redis_cpu_s(client)
                cpu = asyncio.run(rate(server.url, json.dumps(ladders), raws))
                figures = (cpu, redis_cpu_s(client) - redis_before)
                if mode not in best or figures[0] < best[mode][0]:
                    best[mode] = figures
                first = json.loads(raws[0])["standings"][0]["player"]
                sigma_after[mode] = float(client.hget(keys.player(LADDER, first), "sigma") or "nan")
                client.close()
            finally:
                server.stop()
    print(f"ladder of {args.players:,} players; {args.rounds:,} duels after the season start "
          f"(every player's first round of the season: {2 * args.rounds:,} soft resets); best of {args.repeat}")
    print("| step | process CPU | redis-server CPU | Redis commands |\n|---|---:|---:|---:|")
    print(f"| season start (`stream season start`) | {min(start_cpu) * 1e3:.1f} ms | 0 | 0 |")
    for mode, label in (("seasons", "duels, with the season's soft resets"), ("none", "duels, no seasons")):
        cpu, redis_s = best[mode]
        print(f"| {label} | {cpu * 1e6 / args.rounds:.0f} µs/round | {redis_s * 1e6 / args.rounds:.0f} µs/round | - |")
    print(f"| for scale: bulk write of every player's hash (an eager reset's minimum) | {min(write_cpu):.1f} s | - | "
          f"{args.players:,} hashes |")
    assert sigma_after["seasons"] > sigma_after["none"], sigma_after  # the soft reset raised sigma
    ratio = best["seasons"][0] / best["none"][0]
    print(f"seasons / none, process CPU per round: {ratio:.3f}")


if __name__ == "__main__":
    main()
