"""Phase one's engine call on the pipeline's batches: µs per participation, ours against a
reference in the same run.

The rounds are bench/pipeline.py's (``workloads.make_rounds``: duels and 10-player lobbies from
a pool of 2,000, round-robin over two ladders) and the same from a pool of 20 (a wave then holds
a few rounds only).  They are cut into batches of ``PHASE_ONE_BATCH`` rounds, and each batch's
rounds of a ladder are rated by one call of ``pipeline.teams.rate_plain_rounds`` (what phase one
calls) against a prior batch of the call's players only (as phase one unpacks it).  States are
carried across batches; ``--warm`` rounds first give the players their histories (untimed).
Each timed pass starts from the same states:

* ``engine``: the engine as it is (``engine.rate_flat``, the wave path: a compiled loop over
  the rounds of the exact logistic presets was measured against it and removed, BENCHMARKS.md
  "Engine batch call");
* ``openskill``: openskill.py's ``PlackettLuce().rate`` in a plain loop on the same rounds (the
  same run's reference, as bench/engine.py (d)).

    python bench/rounds_batch.py                       # all four workloads
    python bench/rounds_batch.py --only duels-2000 --repeat 5
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stream import engine  # noqa: E402
from stream.batch.profiles import match_rounds  # noqa: E402
from stream.contracts import RoundResult  # noqa: E402
from stream.engine import rounds as engine_rounds  # noqa: E402
from stream.pipeline.teams import rate_plain_rounds  # noqa: E402

BATCH = 64
"""Rounds per phase-one batch (the ``PHASE_ONE_BATCH`` default)."""
LADDERS = 2
WORKLOADS = {  # name: (round size, pool, timed rounds)
    "duels-2000": (2, 2_000, 8_000),
    "lobbies-2000": (10, 2_000, 4_000),
    "duels-20": (2, 20, 8_000),
    "lobbies-20": (10, 20, 2_000),
}

Call = Callable[[engine.PlayerBatch, list[RoundResult], list[np.ndarray], engine.Params], engine.RoundsUpdate]


def rounds_for(size: int, pool: int, count: int, seed: int) -> list[RoundResult]:
    """``count`` matches of ``size`` from ``pool`` players, round-robin over the ladders
    (``workloads.make_rounds`` for any pool)."""
    return [replace(r, ladder=f"bench-{k % LADDERS}")
            for k, r in enumerate(match_rounds(n_players=pool, n_rounds=count, round_size=size, seed=seed))]


def calls(rounds: list[RoundResult]) -> list[tuple[str, list[RoundResult]]]:
    """The engine calls phase one makes: per batch of :data:`BATCH` rounds, each ladder's rounds."""
    out = []
    for a in range(0, len(rounds), BATCH):
        batch = rounds[a:a + BATCH]
        for ladder in dict.fromkeys(r.ladder for r in batch):
            out.append((ladder, [r for r in batch if r.ladder == ladder]))
    return out


class Ladders:
    """Every player's state per ladder (a pool-sized batch per ladder)."""

    def __init__(self, pool: int, params: engine.Params):
        self.index = {f"m{i:0{len(str(pool - 1))}d}": i for i in range(pool)}
        self.state = {f"bench-{k}": engine.PlayerBatch.new(pool, params) for k in range(LADDERS)}

    def copy(self) -> Ladders:
        other = object.__new__(Ladders)
        other.index = self.index
        other.state = {k: v.copy() for k, v in self.state.items()}
        return other


def prepared(ladders: Ladders, work: list[tuple[str, list[RoundResult]]]) -> list[tuple[str, np.ndarray, list[np.ndarray]]]:
    """Per call: its ladder, its players' rows in the ladder's batch and each round's rows in the
    call's prior (players numbered by first participation, as phase one does)."""
    out = []
    for ladder, rounds in work:
        flat = [s.player for r in rounds for s in r.standings]
        players = list(dict.fromkeys(flat))
        position = {p: i for i, p in enumerate(players)}
        rows = np.array([ladders.index[p] for p in players], dtype=np.int64)
        members = [np.array([position[s.player] for s in r.standings], dtype=np.int64) for r in rounds]
        out.append((ladder, rows, members))
    return out


def run(ladders: Ladders, work: list[tuple[str, list[RoundResult]]], prep: list[tuple[str, np.ndarray, list[np.ndarray]]],
        call: Call, params: engine.Params, keep: list[engine.RoundsUpdate] | None = None) -> float:
    """Seconds spent in ``call`` over every call of ``work`` (the priors' gathers and the
    posteriors' stores are not timed)."""
    spent = 0.0
    for (ladder, rounds), (_, rows, members) in zip(work, prep):
        state = ladders.state[ladder]
        prior = state.take(rows)
        t = time.process_time()
        update = call(prior, rounds, members, params)
        spent += time.process_time() - t
        state.put(rows, update.after)
        if keep is not None:
            keep.append(update)
    return spent


def openskill_seconds(rounds: list[RoundResult]) -> float:
    """Seconds for PlackettLuce().rate on every round in a plain loop (ratings kept per ladder and id)."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    ratings: dict[tuple[str, str], object] = {}
    t = time.process_time()
    for rnd in rounds:
        keys = [(rnd.ladder, p) for p in rnd.players()]
        teams = [[ratings.get(k) or model.rating(name=k[1])] for k in keys]
        rated = model.rate(teams, ranks=rnd.ranks().tolist())
        for k, team in zip(keys, rated):
            ratings[k] = team[0]
    return time.process_time() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(WORKLOADS))
    parser.add_argument("--preset", default=engine.DEFAULT_PRESET)
    parser.add_argument("--warm", type=int, default=40_000, help="untimed rounds first (histories)")
    parser.add_argument("--repeat", type=int, default=3, help="timed passes per path (interleaved)")
    parser.add_argument("--rounds", type=int, default=None, help="timed rounds per workload (default: its own)")
    parser.add_argument("--no-openskill", action="store_true")
    args = parser.parse_args()
    params = engine.preset(args.preset)
    engine.warm_up()
    print(f"preset {params.name}  batch {BATCH} rounds over {LADDERS} ladders  warm {args.warm:,} rounds"
          f"  repeat {args.repeat}")
    print("| workload | calls | rounds/call | waves/call | engine µs/part | openskill µs/part | openskill / engine |")
    print("|---|---|---|---|---|---|---|")
    for name in args.only.split(","):
        size, pool, count = WORKLOADS[name]
        count = args.rounds or count
        everything = rounds_for(size, pool, args.warm + count, seed=1)
        warm, timed = everything[:args.warm], everything[args.warm:]
        start = Ladders(pool, params)
        warm_work = calls(warm)
        run(start, warm_work, prepared(start, warm_work), rate_plain_rounds, params)
        work = calls(timed)
        prep = prepared(start, work)
        parts = sum(len(r.standings) for r in timed)
        waves = np.mean([int(_waves_of(rs).max()) + 1 for _, rs in work])
        seconds = [run(start.copy(), work, prep, rate_plain_rounds, params) for _ in range(args.repeat)]
        ours = 1e6 * min(seconds) / parts
        theirs = None if args.no_openskill else 1e6 * openskill_seconds(timed) / parts
        print(f"| {name} | {len(work)} | {len(timed) / len(work):.1f} | {waves:.1f} | {ours:.2f} | "
              f"{'-' if theirs is None else f'{theirs:.1f}'} | {'-' if theirs is None else f'{theirs / ours:.2f}x'} |",
              flush=True)


def _waves_of(rounds: list[RoundResult]) -> np.ndarray:
    """Each round's wave in a call (``rounds._waves``)."""
    flat = [s.player for r in rounds for s in r.standings]
    position = {p: i for i, p in enumerate(dict.fromkeys(flat))}
    rows = np.array([position[p] for p in flat], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum([len(r.standings) for r in rounds])))
    return engine_rounds._waves(rows, offsets, np.ones(len(rounds), dtype=bool), len(position))


if __name__ == "__main__":
    main()
