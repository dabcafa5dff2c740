"""``stream tune`` for Elo-MMR against the authors' tuned Codeforces parameters, same run.

Run by hand:  python bench/tune.py [--quick] [--input FILE] [--budget N] [--jobs N]

On a contest-history-like history (``--input``: any RoundResult JSONL, e.g. what
``stream generate-synthetic --profile contest-history`` writes where that profile exists; default:
the generator below), tunes the ``mmr`` preset (weight_limit, sig_limit, rho) with
:func:`stream.batch.tune.tune` on the first 70 % and scores on the held-out last 30 %: tuned
``mmr``, ``mmr``'s defaults and ``paper-codeforces`` (the authors' parameters tuned on
Codeforces), every one rated through all rounds.  Prints the held-out metrics and the seconds.

The generator's shape is Codeforces-like rather than the paper's §6.1 one: the pool grows over
time (players join at a random round), activity is heavy-tailed (each player enters a round with
a Beta(0.4, 3) probability, so most play a few rounds and some play most), newcomers improve over
their first rounds, every skill drifts, and round sizes vary with who shows up.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stream.batch import read_rounds  # noqa: E402
from stream.batch.tune import held_out, tune  # noqa: E402
from stream.contracts import RoundResult, Standing  # noqa: E402

START_TIME = 1_600_000_000.0
SHAPE = dict(n_players=3_000, n_rounds=150)
QUICK_SHAPE = dict(n_players=300, n_rounds=30)


def contest_history(n_players: int, n_rounds: int, seed: int = 0) -> list[RoundResult]:
    """A growing, heavy-tailed-activity history (see the module docstring); fully seeded."""
    rng = np.random.default_rng(seed)
    skill = rng.normal(1400.0, 300.0, n_players)
    talent = rng.normal(0.0, 250.0, n_players)  # what a newcomer grows towards
    joins = np.sort(rng.integers(0, int(n_rounds * 0.8), n_players))
    joins[: n_players // 20] = 0  # a founding crowd
    activity = rng.beta(0.4, 3.0, n_players)
    played = np.zeros(n_players, dtype=np.int64)
    width = len(str(n_players - 1))
    rounds = []
    for k in range(n_rounds):
        who = np.flatnonzero((joins <= k) & (rng.random(n_players) < activity))
        if who.size < 2:
            continue
        perf = skill[who] + rng.logistic(0.0, 110.0, who.size)
        order = np.argsort(-perf, kind="stable")
        ranks = np.arange(1, who.size + 1)
        rounds.append(RoundResult(
            round_id=f"ch-{k:05d}", ladder="default", occurred_at=START_TIME + 86_400.0 * 7 * k,
            standings=[Standing(f"p{int(i):0{width}d}", int(r)) for i, r in zip(who[order], ranks)]))
        played[who] += 1
        young = who[played[who] <= 15]
        skill[young] += talent[young] / 15.0  # learning over the first rounds
        skill += rng.normal(0.0, 15.0, n_players)
    return rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny history and budget (smoke test)")
    parser.add_argument("--input", type=Path, help="RoundResult JSONL to use instead of the generator")
    parser.add_argument("--budget", type=int, default=None)
    parser.add_argument("--holdout", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args()
    shape = QUICK_SHAPE if args.quick else SHAPE
    budget = args.budget if args.budget is not None else (3 if args.quick else 16)
    rounds = read_rounds(args.input) if args.input else contest_history(**shape, seed=args.seed)
    source = str(args.input) if args.input else f"bench/tune.py contest_history({shape}, seed={args.seed})"
    participations = sum(len(r.standings) for r in rounds)
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, python {platform.python_version()}")
    print(f"history: {source}: {len(rounds)} rounds, {participations} participations, "
          f"{len({s.player for r in rounds for s in r.standings})} players")
    started = time.perf_counter()
    result = tune(rounds, "mmr", budget=budget, holdout=args.holdout, seed=args.seed, jobs=args.jobs)
    tuned_s = time.perf_counter() - started
    print(f"tune mmr: {budget + 1} parameter sets on the first {result.split} rounds in {tuned_s:.1f} s "
          f"({args.jobs or os.cpu_count()} processes); held out: {len(rounds) - result.split} rounds")
    rows = [("mmr tuned", "mmr", result.best_params, result.objectives[result.best]),
            ("mmr defaults", "mmr", None, result.objectives[0]),
            ("paper-codeforces", "paper-codeforces", None, float("nan"))]
    print("| system | params | tune pair_exp | held-out pair_all | held-out pair_exp | held-out rank_all "
          "| held-out rank_exp |")
    print("|---|---|---:|---:|---:|---:|---:|")
    scores = {}
    for label, name, params, obj in rows:
        s = held_out(rounds, result.split, name, params)
        scores[label] = s
        shown = " ".join(f"{k}={v:g}" for k, v in (params or {}).items()) or "its defaults"
        print(f"| {label} | {shown} | {obj:.3f} | {s.pair_all:.3f} | {s.pair_exp:.3f} | {s.rank_all:.3f} "
              f"| {s.rank_exp:.3f} |")
    gain = scores["mmr tuned"].pair_all - scores["paper-codeforces"].pair_all
    gain_exp = scores["mmr tuned"].pair_exp - scores["paper-codeforces"].pair_exp
    verdict = "MET" if gain > 0 and gain_exp > 0 else "NOT MET"
    print(f"target (tuned mmr beats paper-codeforces on held-out pair inversion): {verdict} "
          f"(all {gain:+.3f}, experienced {gain_exp:+.3f} points)")


if __name__ == "__main__":
    main()
