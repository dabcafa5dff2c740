"""Matchmaking tick time against pool size (issue 27: a duel tick over 100,000 waiting players
<= 100 ms), next to baselines in the same run.

Run by hand:  python bench/matchmaking.py [--sizes 1000,10000,100000 --shapes duel,5v5,ffa8,ffa64
                                            --repeat 3 --seed 0 --service]

Pool: ratings mu ~ N(1500, 350), sigma ~ U(60, 120), one player in ten a newcomer (absent from
the ratings); waits ~ U(0, 60) s; parties (5v5 only) of 1 (70 %), 2 (20 %) or 3 (10 %) players.
Each row times ``form_matches`` on the default ladder (Elo-MMR, mmr-bounded) with the QUEUES
defaults over the pool's columns (``TicketColumns``, as the store reads them; best of --repeat;
the first call, which builds the odds table, is not timed): the whole tick, arrays in, arrays
out. ``core cpu``: its matching alone (rating sort, windows, odds, choice); ``objs cpu``: reading
the result as FormedMatch objects (what the service does to write each match's records). Baselines: ``window``, the
same tick with a fixed rating window (100) and no quality floor; ``all-pairs`` (duels, <= 2,000
tickets), every pair's quality computed and the best pairs taken greedily (O(n^2 log n)), the
quality our neighbour pairing gives up, if any. With ``--service``, two rows per shape and
size, from a private redis-server holding the pool and the rated players' hashes, each tick then
``form_matches`` (its result as arrays, not the records a commit writes: those cost per match
formed, not per ticket waiting), in one run: ``service``, the pool and every waiting player's
rating read in full (``MatchStore.read_pool``, ``MatchStore.ratings``: what a tick did before
the worker kept a copy, and what its first tick after a start or a take-over does);
``service+``, the worker's incremental read (``stream.pipeline.matchmaking``: the pool's version
compared, the copy's joins since the last tick appended, the new players' ratings and a
round-robin slice of REFRESH_PLAYERS read), with 1 % of the pool joining (new players) and 1 %
cancelling between two ticks through the tickets agent's path, whose handling of them in the
copy is the ``objs cpu`` column of that row.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import cast

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stream.engine.ladders import parse_ladders  # noqa: E402
from stream.engine.predict import binary_entropy, outcome_model  # noqa: E402
from stream.engine.seasons import next_round_view  # noqa: E402
from stream.matchmaking import QueueConfig, TicketColumns, TickResult, form_matches, warm_up  # noqa: E402
from stream.matchmaking.odds import ahead  # noqa: E402
from stream.matchmaking.pairing import single_matches  # noqa: E402
from stream.matchmaking.pool import build_pool  # noqa: E402
from stream.matchmaking.simulate import window_queue  # noqa: E402

SHAPES = {"duel": (2, 1), "5v5": (2, 5), "ffa8": (8, 1), "ffa64": (64, 1)}
ALL_PAIRS_MAX = 2000
NOW = 10_000.0


def pool(n: int, team_size: int, rng: np.random.Generator) -> TicketColumns:
    """``n`` waiting tickets as the store reads them: columns (module docstring)."""
    sizes = np.ones(n, dtype=np.int64) if team_size == 1 else rng.choice([1, 2, 3], n, p=[0.7, 0.2, 0.1]).astype(np.int64)
    waits = rng.uniform(0, 60, n)
    count = int(sizes.sum())
    mu, sigma = rng.normal(1500, 350, count), rng.uniform(60, 120, count)
    newcomer = rng.random(count) < 0.1
    mu[newcomer] = sigma[newcomer] = np.nan
    ids = np.array([f"t{i}" for i in range(n)], dtype=object)
    players = np.array([f"p{i}" for i in range(count)], dtype=object)
    return TicketColumns(ids, sizes, players, NOW - waits, mu, sigma)


def best_of(repeat: int, call) -> tuple[tuple[float, float], object]:  # type: ignore[no-untyped-def]
    """The least wall time and the least CPU time (ms) of ``repeat`` calls, and the last result.
    On a shared machine the CPU time is the steadier figure (the wall time counts the waits for
    a core)."""
    wall, cpu, out = [], [], None
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        out = call()
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return (min(wall), min(cpu)), out


def all_pairs(waiting: TicketColumns, noob: tuple[float, float], model) -> tuple[int, float]:  # type: ignore[no-untyped-def]
    """Every pair's quality, best pairs first, greedily: (matches, mean quality)."""
    new = np.isnan(waiting.mu)
    mu, sigma = np.where(new, noob[0], waiting.mu), np.where(new, noob[1], waiting.sigma)
    i, j = np.triu_indices(len(waiting), k=1)
    quality = binary_entropy(ahead(mu[i], sigma[i], mu[j], sigma[j], model))
    used = np.zeros(len(waiting), dtype=bool)
    taken = []
    for k in np.argsort(-quality, kind="stable").tolist():
        a, b = i[k], j[k]
        if not used[a] and not used[b]:
            used[a] = used[b] = True
            taken.append(quality[k])
    return len(taken), float(np.mean(taken)) if taken else float("nan")


def service_tick(queue: QueueConfig, waiting: TicketColumns, ladder, repeat: int,
                 churn: float = 0.01) -> tuple[tuple[float, float], tuple[float, float], tuple[float, float], int, int]:  # type: ignore[no-untyped-def]
    """The worker's reads and ``form_matches`` over ``waiting`` joined to a private redis-server,
    its rated players' hashes written (module docstring), least wall and CPU ms of ``repeat``
    ticks each way, in one run: ``full`` (the pool and every waiting player's rating read each
    tick), ``incremental`` (the worker's copy of the pool: the version compared, the joins and
    cancels since the last tick applied by the tickets agent's path, the new players' and a
    round-robin slice's ratings read; ``churn`` of the pool joins and as many cancel between
    ticks) and ``copy cost`` (that path's handling of the joins and cancels, per tick); the matches
    each way's last tick formed."""
    import asyncio

    from stream.pipeline.matchmaking import REFRESH_PLAYERS, MatchTopicNames, Matchmaker, _pool_copy
    from stream.stack.redis_server import RedisServer
    from stream.store import keys
    from stream.store.matchmaking import MatchStore
    from stream.store.store import Store

    formed: dict[str, int] = {}

    def tick(way: str, pool: TicketColumns, last_time: np.ndarray) -> None:
        mu, sigma = next_round_view(ladder.params, pool.mu, pool.sigma, last_time, NOW)  # as the worker's tick
        formed[way] = len(form_matches(queue, replace(pool, mu=mu, sigma=sigma), NOW, ladder))

    async def run(url: str) -> tuple[tuple[float, float], tuple[float, float], tuple[float, float], int, int]:
        store = Store.from_url(url, history_length=3)
        ms = MatchStore(store)
        mm = Matchmaker(None, MatchTopicNames("m", "e", "d"), ms)  # type: ignore[arg-type]  # the copy's path only
        flat, first = waiting.players.tolist(), waiting.start.tolist()
        rated = ~np.isnan(waiting.mu)
        for chunk in range(0, len(flat), 5000):
            pipe = store.client.pipeline(transaction=False)
            for i in range(chunk, min(len(flat), chunk + 5000)):
                if rated[i]:
                    pipe.hset(keys.player(queue.ladder, flat[i]), mapping={
                        "mu": repr(float(waiting.mu[i])), "sigma": repr(float(waiting.sigma[i])), "last_time": "1.0"})
            await pipe.execute()
        for chunk in range(0, len(waiting), 5000):
            rows = range(chunk, min(len(waiting), chunk + 5000))
            await ms.join(queue.name, [(waiting.ticket_id[i], flat[first[i]:first[i + 1]], float(waiting.created[i]), None)
                                       for i in rows], now=NOW, hold_s=600.0)
        full, incremental, copy_cost = [], [], []
        await _pool_copy(mm, queue.name, -1)  # the first tick of a worker: a full read
        fresh, cancel_at = 0, 0
        n = max(1, int(len(waiting) * churn))
        for _ in range(repeat):
            gc.collect()  # each way's tick starts from the same collector state
            start, start_cpu = time.perf_counter(), time.process_time()
            pool = (await ms.read_pool(queue.name)).tickets
            assert pool is not None
            mu, sigma, last_time = await ms.ratings(queue.ladder, pool.players.tolist())
            tick("full", replace(pool, mu=mu, sigma=sigma), last_time)
            full.append(((time.perf_counter() - start) * 1000, (time.process_time() - start_cpu) * 1000))
            # between two ticks: joins of new players and cancels, through the tickets agent's path
            ops = [("join", (f"new{fresh + i}", [f"newp{fresh + i}"], NOW - 1.0, None)) for i in range(n)]
            ops += [("cancel", waiting.ticket_id[(cancel_at + i) % len(waiting)]) for i in range(n)]
            fresh, cancel_at = fresh + n, cancel_at + n
            mm.copies.begin(queue.name)
            applied = await ms.apply(queue.name, ops, now=NOW, hold_s=600.0)
            start, start_cpu = time.perf_counter(), time.process_time()
            mm.copies.applied(queue.name, applied.before, applied.after,
                              joins=[a for (k, a), o in zip(ops, applied.outcomes) if k == "join" and o.outcome == "new"],
                              removed=[a for (k, a), o in zip(ops, applied.outcomes) if k == "cancel" and o.outcome == "cancelled"])
            copy_cost.append(((time.perf_counter() - start) * 1000, (time.process_time() - start_cpu) * 1000))
            gc.collect()
            start, start_cpu = time.perf_counter(), time.process_time()
            view = await ms.read_pool(queue.name, tickets=False)
            copy = await _pool_copy(mm, queue.name, view.version)
            stale = copy.stale_players(REFRESH_PLAYERS)
            if stale.size:
                copy.set_ratings(stale, *await ms.ratings(queue.ladder, copy.tickets.players[stale].tolist()))
            tick("incremental", *copy.columns())
            incremental.append(((time.perf_counter() - start) * 1000, (time.process_time() - start_cpu) * 1000))
        await store.close()

        def best(rows: list[tuple[float, float]]) -> tuple[float, float]:
            return min(w for w, _ in rows), min(c for _, c in rows)
        return best(full), best(incremental), best(copy_cost), formed["full"], formed["incremental"]

    server = RedisServer().start()
    try:
        return asyncio.run(run(server.url))
    finally:
        server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--service", action="store_true", help="also time the tick's reads from Redis")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    ladder = parse_ladders("").of("bench")
    model = outcome_model(ladder)
    noob = (ladder.newcomer.mu_noob, ladder.newcomer.sig_noob)
    warm_up()
    print(f"machine: {platform.platform()}, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.1f}; "
          f"python {platform.python_version()}, numpy {np.__version__}")
    print(f"{'shape':<7}{'waiting':>9}  {'matcher':<10}{'wall ms':>9}{'cpu ms':>9}{'core cpu':>9}{'objs cpu':>9}{'matches':>9}{'quality':>9}")
    for shape in args.shapes.split(","):
        teams, team_size = SHAPES[shape]
        queue = QueueConfig(shape, "bench", teams=teams, team_size=team_size)
        for n in sizes:
            rng = np.random.default_rng(args.seed)
            waiting = pool(n, team_size, rng)
            ms, result = best_of(args.repeat, lambda: form_matches(queue, waiting, NOW, ladder))
            tick = cast(TickResult, result)
            quality = float(tick.quality.mean()) if len(tick) else float("nan")
            core = (float("nan"), float("nan"))
            if team_size == 1:
                built = build_pool(queue, waiting, NOW, noob).take(np.argsort(waiting.created, kind="stable"))
                everyone = np.arange(len(waiting))
                core, _ = best_of(args.repeat, lambda: single_matches(queue, built, everyone, model))
            objects, _ = best_of(1, lambda: tick.matches)
            print(f"{shape:<7}{n:>9}  {'ours':<10}{ms[0]:>9.1f}{ms[1]:>9.1f}{core[1]:>9.1f}{objects[1]:>9.1f}"
                  f"{len(tick):>9}{quality:>9.4f}")
            if args.service:
                full, incremental, copy_cost, formed_full, formed_copy = service_tick(queue, waiting, ladder, args.repeat)
                print(f"{shape:<7}{n:>9}  {'service':<10}{full[0]:>9.1f}{full[1]:>9.1f}{'':>9}{'':>9}{formed_full:>9}")
                print(f"{shape:<7}{n:>9}  {'service+':<10}{incremental[0]:>9.1f}{incremental[1]:>9.1f}{'':>9}"
                      f"{copy_cost[1]:>9.1f}{formed_copy:>9}")
            fixed = window_queue(queue, 100.0)
            ms, result = best_of(args.repeat, lambda: form_matches(fixed, waiting, NOW, ladder))
            tick = cast(TickResult, result)
            quality = float(tick.quality.mean()) if len(tick) else float("nan")
            print(f"{shape:<7}{n:>9}  {'window':<10}{ms[0]:>9.1f}{ms[1]:>9.1f}{'':>9}{'':>9}{len(tick):>9}{quality:>9.4f}")
            if shape == "duel" and n <= ALL_PAIRS_MAX:
                ms, greedy = best_of(1, lambda: all_pairs(waiting, noob, model))
                count, q = cast(tuple[int, float], greedy)
                print(f"{shape:<7}{n:>9}  {'all-pairs':<10}{ms[0]:>9.1f}{ms[1]:>9.1f}{'':>9}{'':>9}{count:>9}{q:>9.4f}")


if __name__ == "__main__":
    main()
