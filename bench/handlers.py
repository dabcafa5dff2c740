"""The pipeline's handlers without Kafka: phase one + phase two of every round against a private
redis-server, in one process, next to ``stream.batch.replay`` of the same rounds.

What the stream costs on top of the engine, apart from Faust and the broker: Redis round trips,
(de)serialisation, event encoding. Prints µs per participation (wall, the worker's CPU and
redis-server's CPU) and, with ``--profile``, the handlers' top functions (cProfile). With
``--compare-verify`` it also runs phase two without its fan-out check (``verify=False``), the
two modes alternating on fresh servers in the same run, and prints both (best of ``--repeat``).

With ``--batch-rounds N[,N...]`` it times phase two alone on batches of N rounds of a chained
fan-out (a batched phase one's output, DESIGN15: one player in several rounds of a batch, each
entry's ``previous_seq``; seeded in Redis untimed by ``phase_one.handle_rounds``, all rounds one batch), every
partition's sections joined into messages of at most MAX_MESSAGE_BYTES; with ``--before REF``
also ``phase_two.handle_updates`` as it is at git ref REF, on the same sections as one-section
messages (the same batches) and with the Store and Lua scripts at REF, alternating on fresh
servers. Each run's largest |mu - replay|
shows whether it rated the chains right.

With ``--phase-one-batch N`` it compares phase one one round at a time (``handle_one``: a batch
of one, each round's phase two right after it) with phase one of N rounds as a unit (``handle_rounds``, then
the batch's phase two as the agent runs it), alternating on fresh servers in
the same run (best of ``--repeat``): µs of phase one per round, and the whole per participation;
with ``--profile`` the top functions of the batches' phase one alone (cProfile).

With ``--teams N`` it compares team rounds with individual rounds of the same size through
the handlers (``handle_rounds`` in batches of N, then the batch's phase two as the agent runs
it): rounds of 2 teams of 5 and of 10 squads of 3 (20 % of players playing a share U(0.2, 1) of
the match), each next to individual rounds of the same players, size, times and pool, alternating
on fresh servers in the same run (best of ``--repeat``): µs per participation (wall, the
process's CPU, redis-server's CPU) and the ratio team / individual.

With ``--phase-one-batch N --compare-cache`` phase one (N rounds per ``handle_rounds``) and phase
two run concurrently in one event loop, as a worker's two agents do: phase two takes what phase
one sent, up to PHASE_TWO_BATCH messages at a time, while phase one goes on with the next batch;
the runs alternate phase one's cross-batch posterior cache on (PHASE_ONE_CACHE_PLAYERS, its
default) and off (0: every held player waits at the per-player barrier, as before the cache), on
fresh servers, best of ``--repeat``: whole wall, process CPU and redis-server CPU per
participation, players the barrier held and players the cache let through.

Usage: python bench/handlers.py [--size 1000] [--rounds 40] [--pool 2000] [--partitions 4] [--profile]
                                [--compare-verify] [--repeat 2] [--batch-rounds 1,100] [--before main]
                                [--phase-one-batch 64 [--compare-cache]] [--teams 64]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import subprocess
import sys
import time
import types
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import redis

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from redis_stats import command_rows, redis_commands, redis_cpu_s  # noqa: E402
from stream.batch.replay import replay  # noqa: E402
from stream.batch.synthetic import synthetic_rounds  # noqa: E402
from stream.engine import preset, warm_up  # noqa: E402
from stream.pipeline.context import PipelineContext  # noqa: E402
from stream.pipeline.messages import Incoming  # noqa: E402
from stream.pipeline.outbox import TopicNames  # noqa: E402
from stream.pipeline.phase_one import handle_one, handle_rounds  # noqa: E402
from stream.pipeline.phase_two import handle_updates  # noqa: E402
from stream.pipeline.updates_batches import phase_two_batch  # noqa: E402
from stream.settings import Settings  # noqa: E402
from stream.stack.redis_server import RedisServer  # noqa: E402
from stream.pipeline.messages import join_fanout, value_limit  # noqa: E402

PROFILE_ROWS = 30
REDIS_COMMANDS_SHOWN = 8


async def run(url: str, rounds: list, partitions: int, verify: bool = True) -> None:  # type: ignore[type-arg]
    ctx = PipelineContext.from_settings(Settings(redis_url=url, partitions=partitions))
    for r in rounds:
        result = await handle_one(ctx, Incoming(r.to_json().encode()))
        # phase two of the round's messages in one batch (a worker's batch holds ~1-10 messages)
        await handle_updates(ctx, [message.value for message in result.updates], verify=verify)
    await ctx.store.close()


PHASE_TWO_CPU_S = 0.0
"""Process CPU seconds in ``phase_two_batch`` of the last :func:`run_phase_one` (set by it)."""

NAMES = TopicNames(player_updates="player-updates", rating_changes="rating-changes", rounds_dlq="rounds-dlq")


async def run_phase_one(url: str, rounds: list, partitions: int, batch: int,  # type: ignore[type-arg]
                        profiler: cProfile.Profile | None = None) -> tuple[float, float]:
    """Phase one and phase two of every round; ``batch`` 0: one round at a time (handle_one,
    its phase two right after), else N rounds per ``handle_rounds`` then the batch's phase two
    (``phase_two_batch``, as the agent). Returns (phase one seconds, phase one CPU seconds).
    ``profiler``: enabled around phase one only."""
    ctx = PipelineContext.from_settings(Settings(redis_url=url, partitions=partitions))
    raws = [r.to_json().encode() for r in rounds]
    spent = cpu = 0.0
    global PHASE_TWO_CPU_S
    PHASE_TWO_CPU_S = 0.0

    async def send(records: list, what: str) -> None:  # type: ignore[type-arg]
        pass

    for start in range(0, len(raws), max(1, batch)):
        t, c = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        if batch:
            messages = (await handle_rounds(ctx, [Incoming(raw) for raw in raws[start:start + batch]])).messages
        else:
            messages = (await handle_one(ctx, Incoming(raws[start]))).updates
        if profiler:
            profiler.disable()
        spent, cpu = spent + time.perf_counter() - t, cpu + time.process_time() - c
        c = time.process_time()
        await phase_two_batch(ctx, NAMES, [Incoming(m.value) for m in messages], send)
        PHASE_TWO_CPU_S += time.process_time() - c
    await ctx.store.close()
    return spent, cpu


def measure_phase_one(rounds: list, partitions: int, batch: int,  # type: ignore[type-arg]
                      profiler: cProfile.Profile | None = None) -> tuple[float, float, float, float, float]:
    """(phase one wall s, phase one CPU s, whole wall s, redis-server CPU s, phase two CPU s) on a
    fresh server; ``profiler``: enabled around phase one."""
    server = RedisServer().start()
    try:
        client = redis.Redis.from_url(server.url)
        redis_before, started = redis_cpu_s(client), time.perf_counter()
        phase_one_s, phase_one_cpu = asyncio.run(run_phase_one(server.url, rounds, partitions, batch, profiler))
        figures = (phase_one_s, phase_one_cpu, time.perf_counter() - started, redis_cpu_s(client) - redis_before,
                   PHASE_TWO_CPU_S)
        client.close()
    finally:
        server.stop()
    return figures


def compare_phase_one(rounds: list, partitions: int, batch: int, repeat: int, replay_s: float,  # type: ignore[type-arg]
                      profiler: cProfile.Profile | None = None) -> None:
    """Print phase one one by one vs in batches of ``batch`` (alternating runs, best of ``repeat``);
    ``profiler``: enabled around the batches' phase one (``handle_rounds``)."""
    best: dict[int, tuple[float, ...]] = {}
    for _ in range(repeat):
        for mode in (0, batch):
            figures = measure_phase_one(rounds, partitions, mode, profiler if mode else None)
            best[mode] = tuple(min(a, b) for a, b in zip(best.get(mode, figures), figures))
    n, parts = len(rounds), sum(r.field_size for r in rounds)
    print(f"\nphase one one by one vs {batch} rounds per handle_rounds (best of {repeat}, alternating, same run)\n")
    print("| mode | phase one µs/round (wall) | phase one µs/round (CPU) | whole µs/part. (wall) "
          "| redis-server CPU µs/part. | phase two CPU µs/part. |\n|---|---:|---:|---:|---:|---:|")
    print(f"| replay (in process) | | | {replay_s * 1e6 / parts:.1f} | | |")
    for mode in (0, batch):
        one_s, one_cpu, wall_s, redis_s, two_cpu = best[mode]
        label = "one by one (handle_one)" if mode == 0 else f"batches of {batch} (handle_rounds)"
        print(f"| {label} | {one_s * 1e6 / n:.0f} | {one_cpu * 1e6 / n:.0f} | {wall_s * 1e6 / parts:.1f} "
              f"| {redis_s * 1e6 / parts:.1f} | {two_cpu * 1e6 / parts:.1f} |")


def team_rounds(teams: int, size: int, count: int, pool: int, seed: int) -> tuple[list, list]:  # type: ignore[type-arg]
    """``count`` rounds of ``teams`` teams of ``size`` from a pool (20 % of players play a share
    U(0.2, 1)), and the individual rounds of the same players in the same order and times."""
    import numpy as np

    from stream.contracts import RoundResult, Standing

    rng = np.random.default_rng(seed)
    team_out, solo_out = [], []
    n = teams * size
    for k in range(count):
        players = [f"q{i}" for i in rng.choice(pool, n, replace=False).tolist()]
        shares = np.where(rng.random(n) < 0.2, rng.uniform(0.2, 1.0, n), 1.0).tolist()
        order = rng.permutation(teams).tolist()
        when = 1.7e9 + 3600.0 * k
        team_out.append(RoundResult(round_id=f"t{k}", ladder="bench", occurred_at=when, standings=[
            Standing(p, order[i // size] + 1, f"team{i // size}", w) for i, (p, w) in enumerate(zip(players, shares))]))
        solo_out.append(RoundResult(round_id=f"t{k}", ladder="bench", occurred_at=when,
                                    standings=[Standing(p, i + 1) for i, p in enumerate(players)]))
    return team_out, solo_out


def measure_whole(rounds: list, partitions: int, batch: int) -> tuple[float, float, float]:  # type: ignore[type-arg]
    """(wall s, process CPU s, redis-server CPU s) of phase one in batches + phase two, fresh server."""
    server = RedisServer().start()
    try:
        client = redis.Redis.from_url(server.url)
        redis_before, started, cpu = redis_cpu_s(client), time.perf_counter(), time.process_time()
        asyncio.run(run_phase_one(server.url, rounds, partitions, batch))
        figures = (time.perf_counter() - started, time.process_time() - cpu, redis_cpu_s(client) - redis_before)
        client.close()
    finally:
        server.stop()
    return figures


def compare_teams(partitions: int, batch: int, repeat: int, count: int, pool: int) -> None:
    """Print team rounds vs individual rounds of the same size (see the module docstring)."""
    print(f"\nteam rounds vs individual rounds of the same size: {count} rounds each, pool {pool:,}, "
          f"{batch} rounds per handle_rounds, {partitions} partitions (best of {repeat}, alternating, same run)\n")
    print("| rounds | µs/part. wall | µs/part. process CPU | µs/part. redis-server CPU | team / individual (wall, CPU) |")
    print("|---|---:|---:|---:|---:|")
    for teams, size in ((2, 5), (10, 3)):
        team, solo = team_rounds(teams, size, count, pool, seed=teams)
        parts = sum(r.field_size for r in team)
        best: dict[str, tuple[float, ...]] = {}
        for _ in range(repeat):
            for name, rounds in (("individual", solo), ("team", team)):
                figures = measure_whole(rounds, partitions, batch)
                best[name] = tuple(min(a, b) for a, b in zip(best.get(name, figures), figures))
        for name in ("individual", "team"):
            wall, cpu, red = (x * 1e6 / parts for x in best[name])
            label = f"{teams} teams of {size}" if name == "team" else f"individual, {teams * size} players"
            ratio = (f"{best['team'][0] / best['individual'][0]:.2f}, {best['team'][1] / best['individual'][1]:.2f}"
                     if name == "team" else "")
            print(f"| {label} | {wall:.1f} | {cpu:.1f} | {red:.1f} | {ratio} |")


async def run_concurrent(url: str, rounds: list, partitions: int, batch: int,  # type: ignore[type-arg]
                         cache_players: int) -> tuple[int, int]:
    """Phase one in batches of ``batch`` and phase two as a concurrent task (the worker's two
    agents in one loop), the cache sized ``cache_players``. Returns (players the barrier held at
    their first check, players the cache let through)."""
    import stream.pipeline.phase_one as phase_one

    settings = Settings(redis_url=url, partitions=partitions, phase_one_cache_players=cache_players)
    ctx = PipelineContext.from_settings(settings)
    raws = [r.to_json().encode() for r in rounds]
    queue: asyncio.Queue[list[Incoming] | None] = asyncio.Queue()
    held = [0]
    original = phase_one.wait_for_priors

    async def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        first = kwargs.get("first")
        held[0] += len(first.blocked) if first is not None else 0
        return await original(*args, **kwargs)

    async def send(records: list, what: str) -> None:  # type: ignore[type-arg]
        pass

    async def phase_two() -> None:
        done = False
        while not done:
            events = [] if (first := await queue.get()) is None else first
            done = first is None
            while not done and not queue.empty() and len(events) < settings.phase_two_batch:
                more = queue.get_nowait()
                done = more is None
                events += more or []
            if events:
                await phase_two_batch(ctx, NAMES, events, send)

    phase_one.wait_for_priors = counting  # type: ignore[assignment]
    try:
        applier = asyncio.ensure_future(phase_two())
        for start in range(0, len(raws), batch):
            messages = (await handle_rounds(ctx, [Incoming(raw) for raw in raws[start:start + batch]])).messages
            queue.put_nowait([Incoming(m.value) for m in messages])
            await asyncio.sleep(0)  # the send's await: phase two's task may run
        queue.put_nowait(None)
        await applier
    finally:
        phase_one.wait_for_priors = original  # type: ignore[assignment]
    hits = ctx.posteriors.hits
    await ctx.store.close()
    return held[0], hits


def compare_cache(rounds: list, partitions: int, batch: int, repeat: int, replay_s: float) -> None:  # type: ignore[type-arg]
    """Print the concurrent phases with the posterior cache off and on (alternating, best of ``repeat``)."""
    default = Settings().phase_one_cache_players
    best: dict[int, tuple[float, ...]] = {}
    counts: dict[int, tuple[int, int]] = {}
    for _ in range(repeat):
        for players in (0, default):
            server = RedisServer().start()
            try:
                client = redis.Redis.from_url(server.url)
                redis_before, started, cpu = redis_cpu_s(client), time.perf_counter(), time.process_time()
                counts[players] = asyncio.run(run_concurrent(server.url, rounds, partitions, batch, players))
                figures = (time.perf_counter() - started, time.process_time() - cpu, redis_cpu_s(client) - redis_before)
                error = mu_error(server.url, rounds)
                assert error <= 1e-9, f"|mu - replay| {error:.1e}"
                client.close()
            finally:
                server.stop()
            best[players] = tuple(min(a, b) for a, b in zip(best.get(players, figures), figures))
    parts = sum(r.field_size for r in rounds)
    per = 1e6 / parts
    print(f"\nphase one ({batch} rounds per handle_rounds) and phase two concurrently, posterior cache off / on "
          f"(best of {repeat}, alternating, same run; Redis equals replay within 1e-9 in every run)\n")
    print("| cache | whole µs/part. (wall) | process CPU µs/part. | redis-server CPU µs/part. "
          "| players held at the barrier | players through the cache |\n|---|---:|---:|---:|---:|---:|")
    print(f"| replay (in process) | {replay_s * per:.1f} | | | | |")
    for players in (0, default):
        wall_s, cpu_s, redis_s = best[players]
        print(f"| {'off (0)' if players == 0 else f'on ({players:,})'} | {wall_s * per:.1f} | {cpu_s * per:.1f} "
              f"| {redis_s * per:.1f} | {counts[players][0]:,} | {counts[players][1]:,} |")


CHECK_BLOCKS = 20
"""Alternating blocks of the interleaved check-alone measurement (``check_alone``)."""
CHECK_CALLS = 25
"""State reads per block."""


async def check_alone(url: str, rounds: list, partitions: int) -> dict[str, tuple[float, float]]:  # type: ignore[type-arg]
    """Phase two's state read of the last round's players without the check, with it (digest set
    cached, as for every batch after a round's first), and with the digest set rebuilt (a round's
    first batch), in alternating blocks on one server: mode -> (wall µs, redis-server CPU µs) per read."""
    import hashlib

    from stream.contracts import PlayerUpdate
    from stream.store import keys
    from stream.store.store import FanOutCheck

    ctx = PipelineContext.from_settings(Settings(redis_url=url, partitions=partitions))
    raws: list[bytes] = []
    for r in rounds:
        raws = [message.value for message in (await handle_one(ctx, Incoming(r.to_json().encode()))).updates]
        await handle_updates(ctx, raws)
    updates = [PlayerUpdate.from_json(raw) for raw in raws]
    ladder, round_id = updates[0].ladder, updates[0].round_id
    players = [(ladder, p) for u in updates for p in u.players]
    client = redis.Redis.from_url(url)
    totals = {mode: [0.0, 0.0] for mode in ("without", "cached", "first")}
    for _ in range(CHECK_BLOCKS):
        for mode in totals:
            redis_before = redis_cpu_s(client)
            for _ in range(CHECK_CALLS):
                if mode == "first":  # its own round trip, not timed (its server CPU is a few µs)
                    await ctx.store.client.delete(keys.round_digests(ladder, round_id))
                started = time.perf_counter()
                checks = [] if mode == "without" else [
                    FanOutCheck(ladder, round_id, [hashlib.sha1(raw).hexdigest() for raw in raws])]
                await ctx.store.load_states(players, checks)
                totals[mode][0] += time.perf_counter() - started
            totals[mode][1] += redis_cpu_s(client) - redis_before
    client.close()
    await ctx.store.close()
    calls = CHECK_BLOCKS * CHECK_CALLS
    return {mode: (wall * 1e6 / calls, cpu * 1e6 / calls) for mode, (wall, cpu) in totals.items()}


Figures = tuple[float, float, float]
"""Wall, process CPU and redis-server CPU seconds."""


def measure(rounds: list, partitions: int, verify: bool,  # type: ignore[type-arg]
            profiler: cProfile.Profile | None = None) -> tuple[Figures, dict[str, tuple[int, int]]]:
    """The handlers' :data:`Figures` on a fresh redis-server, and its command statistics."""
    server = RedisServer().start()
    try:
        client = redis.Redis.from_url(server.url)
        client.config_resetstat()
        redis_before, cpu_before, started = redis_cpu_s(client), time.process_time(), time.perf_counter()
        if profiler:
            profiler.enable()
        asyncio.run(run(server.url, rounds, partitions, verify))
        if profiler:
            profiler.disable()
        figures = (time.perf_counter() - started, time.process_time() - cpu_before, redis_cpu_s(client) - redis_before)
        commands = redis_commands(client)
        client.close()
    finally:
        server.stop()
    return figures, commands


Handler = Callable[..., Awaitable[object]]
"""A phase-two ``handle_updates(ctx, messages)``."""


def file_at(ref: str, path: str) -> str:
    """A file of this repository as it is at git ref ``ref``."""
    return subprocess.run(["git", "-C", str(REPO), "show", f"{ref}:{path}"], capture_output=True, text=True,
                          check=True).stdout


def module_at(ref: str, path: str) -> types.ModuleType:
    """The module ``path`` as it is at ``ref``, loaded under its own name next to this tree's."""
    name = f"{path.removesuffix('.py').replace('/', '_')}_at_{ref.replace('/', '_')}"
    module = types.ModuleType(name)
    sys.modules[name] = module  # dataclasses resolve annotations through sys.modules
    exec(compile(file_at(ref, path), f"{ref}:{path}", "exec"), module.__dict__)
    return module


def phase_two_at(ref: str) -> tuple[Handler, Callable[[str], object]]:
    """``handle_updates`` of stream/pipeline/phase_two.py at ``ref``, and a factory of the Store of
    that ref (stream/store/store.py and its Lua scripts at ``ref``) for a Redis URL."""
    store = module_at(ref, "stream/store/store.py")
    store.source = lambda name: file_at(ref, f"stream/store/scripts/{name}.lua")  # type: ignore[attr-defined]
    settings = Settings()
    return (module_at(ref, "stream/pipeline/phase_two.py").handle_updates,
            lambda url: store.Store.from_url(url, history_length=settings.history_length))


async def run_chained(url: str, rounds: list, partitions: int, batch_rounds: int,  # type: ignore[type-arg]
                      handle: Handler, joined: bool, store: Callable[[str], object] | None = None) -> Figures:
    """Seed the chained fan-out of ``rounds`` (untimed), then time phase two of it in batches of
    ``batch_rounds`` rounds: every partition's sections joined (``joined``) or one message each;
    ``store``: the timed handler's Store (default: this tree's)."""
    settings = Settings(redis_url=url, partitions=partitions)
    ctx = PipelineContext.from_settings(settings)
    batch = await handle_rounds(ctx, [Incoming(r.to_json().encode()) for r in rounds])  # phase one, untimed
    fanouts = [result.updates for result in batch.results if result is not None]
    if store is not None:
        await ctx.store.close()
        ctx = PipelineContext.from_settings(settings, store=store(url))  # type: ignore[arg-type]
    limit = value_limit(settings.max_message_bytes)
    batches = []
    for lo in range(0, len(fanouts), batch_rounds):
        sections = [m for messages in fanouts[lo:lo + batch_rounds] for m in messages]
        batches.append([m.value for m in (join_fanout(sections, limit) if joined else sections)])
    client = redis.Redis.from_url(url)
    redis_before, cpu_before, started = redis_cpu_s(client), time.process_time(), time.perf_counter()
    for batch in batches:
        await handle(ctx, batch)
    figures = (time.perf_counter() - started, time.process_time() - cpu_before, redis_cpu_s(client) - redis_before)
    client.close()
    await ctx.store.close()
    return figures


def mu_error(url: str, rounds: list) -> float:  # type: ignore[type-arg]
    """Largest |mu in Redis - mu of replay| over the rounds' players (inf if one is missing)."""
    from stream.store import keys

    expected = replay(rounds, preset(Settings().engine_preset)).states()
    client = redis.Redis.from_url(url)
    pipe = client.pipeline(transaction=False)
    for ladder, player in expected:
        pipe.hget(keys.player(ladder, player), "mu")
    stored = pipe.execute()
    client.close()
    return max((abs(float(mu) - state.mu) if mu is not None else float("inf")
                for mu, state in zip(stored, expected.values())), default=0.0)


def chained(rounds: list, partitions: int, sizes: Sequence[int], before: str | None,  # type: ignore[type-arg]
            repeat: int) -> None:
    """Print phase two of chained batches per participation (``--batch-rounds``), this tree's
    handler and, with ``before``, the one at that ref, alternating, best of ``repeat``."""
    from stream.pipeline.phase_two import handle_updates as after

    handlers: dict[str, tuple[Handler, bool, Callable[[str], object] | None]] = {"this tree": (after, True, None)}
    if before:
        handle_before, store_before = phase_two_at(before)
        handlers[f"at {before}"] = (handle_before, False, store_before)
    participations = sum(r.field_size for r in rounds)
    best: dict[tuple[int, str], Figures] = {}
    error: dict[tuple[int, str], float] = {}
    for _ in range(repeat):
        for size in sizes:
            for name, (handle, joined, store) in handlers.items():
                server = RedisServer().start()
                try:
                    figures = asyncio.run(run_chained(server.url, rounds, partitions, size, handle, joined, store))
                    error[(size, name)] = mu_error(server.url, rounds)
                finally:
                    server.stop()
                old = best.get((size, name), figures)
                best[(size, name)] = (min(old[0], figures[0]), min(old[1], figures[1]), min(old[2], figures[2]))
    per = 1e6 / participations
    print(f"phase two of chained batches, µs per participation (best of {repeat}; handlers alternating on fresh "
          f"servers, same run)\n")
    print("| rounds per batch | handler | wall | process CPU | redis-server CPU | max abs(mu - replay) |")
    print("|---:|---|---:|---:|---:|---:|")
    for size in sizes:
        for name in handlers:
            wall_s, cpu_s, redis_s = best[(size, name)]
            print(f"| {size:,} | {name} | {wall_s * per:.1f} | {cpu_s * per:.1f} | {redis_s * per:.1f} | "
                  f"{error[(size, name)]:.1e} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--pool", type=int, default=2000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--sort", default="tottime", help="cProfile sort key (tottime, cumulative)")
    parser.add_argument("--compare-verify", action="store_true",
                        help="also run phase two without its fan-out check, alternating, and print both")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each mode with --compare-verify (best kept)")
    parser.add_argument("--batch-rounds", help="comma-separated rounds per phase-two batch: time phase two alone on "
                                               "chained batches (see the module docstring)")
    parser.add_argument("--before", help="with --batch-rounds: also time phase_two.handle_updates at this git ref")
    parser.add_argument("--phase-one-batch", type=int, default=0,
                        help="compare phase one one by one with N rounds per handle_rounds (and only that)")
    parser.add_argument("--teams", type=int, default=0,
                        help="compare team rounds with individual rounds of the same size, N rounds per handle_rounds")
    parser.add_argument("--compare-cache", action="store_true",
                        help="with --phase-one-batch: the two phases concurrently, posterior cache off / on")
    args = parser.parse_args()
    if args.teams:
        warm_up()
        compare_teams(args.partitions, args.teams, args.repeat, args.rounds, args.pool)
        return
    rounds = list(synthetic_rounds(n_players=args.pool, n_rounds=args.rounds, round_size=args.size, seed=1,
                                   ladder="bench"))
    participations = sum(r.field_size for r in rounds)
    warm_up()  # the engine's compiled loops loaded before timing
    if args.batch_rounds:
        print(f"\n{args.rounds} rounds of {args.size:,} players (pool {args.pool:,}), {participations:,} "
              f"participations, {args.partitions} partitions\n")
        chained(rounds, args.partitions, [int(n) for n in args.batch_rounds.split(",")], args.before, args.repeat)
        return
    started = time.perf_counter()
    replay(rounds, preset(Settings().engine_preset), keep_rounds=False)
    replay_s = time.perf_counter() - started
    if args.phase_one_batch and args.compare_cache:
        print(f"\n{args.rounds} rounds of {args.size:,} players (pool {args.pool:,}), {participations:,} participations")
        compare_cache(rounds, args.partitions, args.phase_one_batch, args.repeat, replay_s)
        return
    if args.phase_one_batch:
        print(f"\n{args.rounds} rounds of {args.size:,} players (pool {args.pool:,}), {participations:,} participations")
        profiler = cProfile.Profile() if args.profile else None
        compare_phase_one(rounds, args.partitions, args.phase_one_batch, args.repeat, replay_s, profiler)
        if profiler:
            pstats.Stats(profiler).sort_stats(args.sort).print_stats(PROFILE_ROWS)
        return

    profiler = cProfile.Profile() if args.profile else None
    modes = (False, True) if args.compare_verify else (True,)
    best: dict[bool, Figures] = {}
    for _ in range(args.repeat if args.compare_verify else 1):
        for verify in modes:
            figures, commands = measure(rounds, args.partitions, verify, profiler if verify else None)
            old = best.get(verify, figures)
            best[verify] = (min(old[0], figures[0]), min(old[1], figures[1]), min(old[2], figures[2]))
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
    if args.compare_verify:
        server = RedisServer().start()
        try:
            alone = asyncio.run(check_alone(server.url, rounds, args.partitions))
        finally:
            server.stop()
        print(f"\nphase two's state read of one {args.size:,}-player round, alone, {CHECK_BLOCKS} alternating blocks "
              f"of {CHECK_CALLS} (µs per read; the check hashes the messages in the worker too)\n")
        print("| | without check | with check (digests cached) | with check (round's first: digests built) |")
        print("|---|---:|---:|---:|")
        for i, name in enumerate(("wall", "redis-server CPU")):
            print(f"| {name} | " + " | ".join(f"{alone[mode][i]:.0f}" for mode in ("without", "cached", "first")) + " |")
    print("\n| | Redis command | calls/part. | µs/part. |\n|---|---|---:|---:|")
    print("\n".join(command_rows("handlers", commands, participations, REDIS_COMMANDS_SHOWN)))
    if profiler:
        pstats.Stats(profiler).sort_stats(args.sort).print_stats(PROFILE_ROWS)


if __name__ == "__main__":
    main()
