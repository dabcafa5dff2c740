"""Rating-only models (glicko, codeforces, topcoder, bar, elo-multiplayer): our numpy modules
against the authors' Rust systems of the same kind (elo_mmr_py 2.0.0 ``rate_latest``), same run.

Run by hand:  python bench/models.py [--quick] [--players N --rounds N --round-size N]

(a) a synthetic history (default: the paper's §6.1 dataset, 10,000 players, 50 rounds of 2,500,
    as ``stream generate-synthetic`` writes it) through ``stream.batch.models.replay_model`` and
    through ``elo_mmr_py.rate_latest`` with the model's oracle system;
(b) one round of n players after a warm-up round (so the n ratings differ), per model.
Prints seconds, rounds (or participations) per second, the ratio reference / ours, and the
largest |mu - reference| over all players as a check that both computed the same thing.
Our timings exclude JSON parsing; the reference's exclude building the Contest objects.
elo-multiplayer has no counterpart in the authors' code (reference column empty).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import elo_mmr_py
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine import cpu_model  # noqa: E402  (bench/engine.py)

from stream.batch import synthetic_rounds  # noqa: E402
from stream.batch.models import replay_model  # noqa: E402
from stream.contracts import RoundResult, Standing  # noqa: E402
from stream.engine.models import MODELS  # noqa: E402
from stream.engine.ratings import Ratings, tie_spans  # noqa: E402

SYNTHETIC = dict(n_players=10_000, n_rounds=50, round_size=2_500)
QUICK_SYNTHETIC = dict(n_players=600, n_rounds=6, round_size=150)
BENCHED = [name for name in MODELS if name != "trueskill"]
"""The models measured here; TrueSkill is measured on team leagues (bench/teams.py): its factor
graph, like the ``trueskill`` package's, fails on 2,500-player free-for-alls of newcomers."""
SINGLE_ROUND_SIZES = (2_500, 10_000)
QUICK_SINGLE_ROUND_SIZES = (300,)


def contest(rnd: RoundResult) -> elo_mmr_py.Contest:
    """The round as the authors' contest: standings sorted by rank, 0-based [lo, hi] ties."""
    lo, hi = tie_spans(rnd.ranks())
    players = rnd.players()
    order = np.argsort(lo, kind="stable").tolist()
    return elo_mmr_py.Contest([(players[i], int(lo[i]), int(hi[i])) for i in order], name=rnd.round_id,
                              time_seconds=int(rnd.occurred_at), weight=rnd.weight)


def bench_history(n_players: int, n_rounds: int, round_size: int, seed: int, names: list[str]) -> None:
    rounds = list(synthetic_rounds(n_players, n_rounds, round_size, seed))
    contests = [contest(r) for r in rounds]
    print(f"\n(a) synthetic history: {n_players:,} players, {n_rounds} rounds of {round_size:,} "
          f"({n_rounds * round_size:,} participations)\n")
    print("| model | reference system | ours | reference | reference / ours | max abs mu - ref |")
    print("|---|---|---|---|---|---|")
    for name in names:
        model = MODELS[name]
        t = time.perf_counter()
        ours = {p: mu for _, p, mu, _, _ in replay_model(rounds, model).ratings()}
        mine = time.perf_counter() - t
        cell = f"{mine:.2f} s, {n_rounds / mine:,.1f} rounds/s"
        if model.oracle is None:
            print(f"| {name} | — | {cell} | — | — | — |", flush=True)
            continue
        t = time.perf_counter()
        theirs = elo_mmr_py.rate_latest(contests, system=model.oracle)  # type: ignore[arg-type]
        ref = time.perf_counter() - t
        dev = max(abs(ours[p] - r.mu) for p, r in theirs.items())
        print(f"| {name} | {model.oracle} | {cell} | {ref:.2f} s, {n_rounds / ref:,.1f} rounds/s | "
              f"**{ref / mine:.2f}x** | {dev:.1e} |", flush=True)


def bench_single_rounds(sizes: tuple[int, ...], seed: int, names: list[str]) -> None:
    print("\n(b) one round of n players after a warm-up round (participations per second)\n")
    print("| n | model | ours | reference | reference / ours |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(seed)
    for n in sizes:
        players = [f"p{i}" for i in range(n)]
        warm = RoundResult(round_id="warm", occurred_at=0.0,
                           standings=[Standing(p, int(r)) for p, r in zip(players, rng.permutation(n) + 1)])
        timed = RoundResult(round_id="timed", occurred_at=86_400.0,
                            standings=[Standing(p, int(r)) for p, r in zip(players, rng.permutation(n) + 1)])
        for name in names:
            model = MODELS[name]
            before = model.rate_round(Ratings.new(n, model.params), warm.ranks()).after
            t = time.perf_counter()
            model.rate_round(before, timed.ranks())
            mine = time.perf_counter() - t
            cell = f"{mine:.3f} s, {n / mine:,.0f}/s"
            if model.oracle is None:
                print(f"| {n:,} | {name} | {cell} | — | — |", flush=True)
                continue
            rater = elo_mmr_py.Rater(model.oracle)  # type: ignore[arg-type]
            rater.add(contest(warm))
            c = contest(timed)
            t = time.perf_counter()
            rater.add(c)
            ref = time.perf_counter() - t
            print(f"| {n:,} | {name} | {cell} | {ref:.3f} s, {n / ref:,.0f}/s | **{ref / mine:.2f}x** |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes only (smoke run)")
    parser.add_argument("--players", type=int)
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--round-size", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models", default=",".join(BENCHED), help="comma-separated rating-only models")
    parser.add_argument("--sizes", default=None, help="single-round sizes, comma-separated (default 2500,10000)")
    args = parser.parse_args()
    names = [m for m in args.models.split(",") if m]
    unknown = [m for m in names if m not in MODELS]
    if unknown:
        parser.error(f"unknown models {unknown}; known: {list(MODELS)}")
    history = dict(QUICK_SYNTHETIC if args.quick else SYNTHETIC)
    for key, value in (("n_players", args.players), ("n_rounds", args.rounds), ("round_size", args.round_size)):
        if value is not None:
            history[key] = value
    sizes = tuple(int(s) for s in args.sizes.split(",")) if args.sizes else (
        QUICK_SINGLE_ROUND_SIZES if args.quick else SINGLE_ROUND_SIZES)
    print(f"date {time.strftime('%Y-%m-%d %H:%M %Z')}  nproc {os.cpu_count()}  cpu {cpu_model()}")
    print(f"python {platform.python_version()}  numpy {np.__version__}  elo_mmr_py {elo_mmr_py.__version__}")
    bench_history(history["n_players"], history["n_rounds"], history["round_size"], args.seed, names)
    bench_single_rounds(sizes, args.seed, names)


if __name__ == "__main__":
    main()
