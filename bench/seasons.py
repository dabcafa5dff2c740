"""A season start on a big ladder costs nothing up front: the soft reset is lazy.

A private redis-server holds a ladder of ``--players`` rated players (written with the store's bulk
writer, ``LadderWriter.players``, as a backfill writes them; their states are copies of a few
hundred players rated through a first season). Then:

1. ``stream season start LADDER --at T`` (in process, on a LADDERS file): process CPU, and the
   Redis commands and memory it costs (none: a season is a schedule in the configuration);
2. ``--rounds`` duels of random players after T through the pipeline's handlers (phase one in
   batches of 64, then the batch's phase two, as the agents run them), per mode on its own third
   of the players: ``reset`` (the schedule ``season start`` wrote: every player's first round of
   the new season, so each one is soft-reset), ``steady`` (a season that began before their
   rounds: the checks, no reset) and ``none`` (no seasons); process CPU and redis-server CPU per
   round (the modes' order rotating per repeat, best of ``--repeat``);
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
from stream.store.bulk import LadderWriter  # noqa: E402
from stream.store.player_hash import WRITE_FIELDS, PlayerRows  # noqa: E402
from stream.store.store import Store  # noqa: E402

LADDER = "big"
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z: the first season's rounds
START = T0 + 90 * 86_400.0  # the new season
TEMPLATES = 500
NAMES = TopicNames(player_updates="player-updates", rating_changes="rating-changes", rounds_dlq="rounds-dlq")
SEASONS = {"sigma_to": 250.0, "sigma_share": 0.5, "mu_pull": 0.2}
SEASONS_AT_START = {**SEASONS, "schedule": [{"name": "S1", "start": iso_time(START)}]}
SEASONS_BEFORE = {**SEASONS, "schedule": [{"name": "S1", "start": iso_time(T0 - 86_400.0)}]}
"""A season that started before the players' rounds: the checks run, nobody is reset."""


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
    return [[0, 0, repr(float(after.mu[i])), repr(float(after.sigma[i])), int(after.rounds[i]), "",
             repr(float(after.last_time[i])),
             repr(float(shown[i])), tiers[i], states[i]] for i in range(TEMPLATES)]


async def write_ladder(url: str, players: int, rows: list[list[object]]) -> float:
    """Bulk-write the ladder's players (each a copy of a template row); returns process CPU seconds."""
    assert WRITE_FIELDS == ("last_seq", "queued_seq", "mu", "sigma", "rounds", "last_round", "last_time",
                             "display_rating", "tier", "state")
    store = Store.from_url(url, history_length=Settings().history_length)
    cpu = time.process_time()
    writer = LadderWriter(store)
    await writer.add_ladder(LADDER)
    chunk = 50_000
    for lo in range(0, players, chunk):
        names = [f"p{i:07d}" for i in range(lo, min(players, lo + chunk))]
        cols = list(zip(*(rows[i % TEMPLATES] for i in range(lo, lo + len(names)))))  # WRITE_FIELDS order
        await writer.players(LADDER, names, PlayerRows(seq=cols[0], mu=cols[2], sigma=cols[3], rounds=cols[4],
                                                       last_round=cols[5], last_time=cols[6], display_rating=cols[7],
                                                       tier=cols[8], state=cols[9]))
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
    result = runner.invoke(app, ["season", "start", LADDER, "--at", iso_time(START), "--backdate", "--config-only", "--ladders",
                                 str(path)])
    spent = time.process_time() - cpu
    assert result.exit_code == 0, result.output
    return spent, json.loads(path.read_text())


def duels(players: range, count: int, seed: int, prefix: str) -> list[bytes]:
    """Duels of random players of ``players`` after the season start (round ids ``prefix<k>``)."""
    rng = random.Random(seed)
    out = []
    for k in range(count):
        a, b = rng.sample(players, 2)
        out.append(RoundResult(round_id=f"{prefix}{k}", ladder=LADDER, occurred_at=START + 60.0 + k,
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


MODES = {
    "reset": ("every player's first round of the season (soft reset)", SEASONS_AT_START),
    "steady": ("a season schedule, nobody entering a new season", SEASONS_BEFORE),
    "none": ("no seasons", None),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    warm_up()
    rows = template_rows()
    third = args.players // len(MODES)  # each mode rates its own players: one ladder write per repeat
    raws = {mode: duels(range(k * third, (k + 1) * third), args.rounds, seed=32 + k, prefix=f"{mode}-")
            for k, mode in enumerate(MODES)}
    best: dict[str, tuple[float, float]] = {}
    start_cpu, write_cpu = [], []
    sigma_after: dict[str, float] = {}
    for repeat in range(args.repeat):
        server = RedisServer().start()
        try:
            client = redis.Redis.from_url(server.url)
            write_cpu.append(asyncio.run(write_ladder(server.url, args.players, rows)))
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "ladders.json"
                path.write_text(json.dumps({LADDER: {"model": "mmr-bounded", "seasons": SEASONS}}))
                calls = client.info("stats")["total_commands_processed"]
                memory = client.info("memory")["used_memory"]
                spent, started = season_start(path)
                start_cpu.append(spent)
                assert client.info("stats")["total_commands_processed"] - calls <= 2  # INFO itself is a command
                assert client.info("memory")["used_memory"] - memory < 64 * 1024
            order = list(MODES)[repeat % len(MODES):] + list(MODES)[:repeat % len(MODES)]
            for mode in order:
                seasons = MODES[mode][1]
                ladders = {LADDER: {"model": "mmr-bounded", **({} if seasons is None else {"seasons": seasons})}}
                if mode == "reset":
                    assert ladders == started  # what `stream season start` wrote
                redis_before = redis_cpu_s(client)
                cpu = asyncio.run(rate(server.url, json.dumps(ladders), raws[mode]))
                figures = (cpu, redis_cpu_s(client) - redis_before)
                if mode not in best or figures[0] < best[mode][0]:
                    best[mode] = figures
                first = json.loads(raws[mode][0])["standings"][0]["player"]
                sigma_after[mode] = float(client.hget(keys.player(LADDER, first), "sigma") or "nan")
            client.close()
        finally:
            server.stop()
    assert sigma_after["reset"] > max(sigma_after["none"], sigma_after["steady"]), sigma_after  # the reset raised sigma
    print(f"ladder of {args.players:,} players (bulk-written); {args.rounds:,} duels per mode after the season start, "
          f"each mode on its own players; best of {args.repeat} (process CPU, `time.process_time`)")
    print("| step | process CPU | redis-server CPU | Redis commands |\n|---|---:|---:|---:|")
    print(f"| season start (`stream season start`) | {min(start_cpu) * 1e3:.1f} ms | 0 | 0 |")
    for mode, (label, _) in MODES.items():
        cpu, redis_s = best[mode]
        print(f"| duels, {label} | {cpu * 1e6 / args.rounds:.0f} µs/round | "
              f"{redis_s * 1e6 / args.rounds:.0f} µs/round | - |")
    print(f"| for scale: bulk write of every player's hash (an eager reset's minimum) | {min(write_cpu):.1f} s | - | "
          f"{args.players:,} hashes |")
    for mode in ("reset", "steady"):
        print(f"{mode} / none, process CPU per round: {best[mode][0] / best['none'][0]:.3f}")


if __name__ == "__main__":
    main()
