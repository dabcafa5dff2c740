"""Engine benchmark: our numpy engine against the authors' Rust code (elo_mmr_py 2.0.0).

Run by hand (not by pytest):  python bench/engine.py [--quick] [--max-ref-seconds 180]

(a) the paper's §6.1 synthetic dataset (10,000 players, 50 rounds of 2,500) through
    ``stream.batch.replay`` and through ``elo_mmr_py.Rater.extend``;
(b) single rounds of 10^4, 10^5, 10^6 players.  Each size first rates a warm-up round (all
    newcomers, so every player ends with a distinct rating), then times one more round with a
    fresh random ranking: otherwise all opponents share one (mu, sigma) and the authors' code
    merges them into a single term, which measures nothing.
Prints participations per second (players rated per second) and ratios ours / reference, for
the exact (mmr) and fast (mmr-fast) presets.  A reference run whose time, extrapolated from the
previous size (exact phase one is O(n^2)), would exceed --max-ref-seconds is skipped and the
estimate printed instead.  Our timings exclude JSON parsing; the reference's exclude building
the Contest objects.
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

from stream.batch import replay, synthetic_rounds  # noqa: E402
from stream.contracts import RoundResult  # noqa: E402
from stream.engine import PlayerBatch, preset, rate_round  # noqa: E402

PRESETS = ("mmr", "mmr-fast")
SINGLE_ROUND_SIZES = (10_000, 100_000, 1_000_000)
SYNTHETIC = dict(n_players=10_000, n_rounds=50, round_size=2_500, seed=0)
QUICK_SYNTHETIC = dict(n_players=2_000, n_rounds=10, round_size=500, seed=0)
DEFAULT_MAX_REF_SECONDS = 180.0
ROUND_GAP_S = 86_400.0


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def to_contest(names: list[str], ranks: np.ndarray, time_s: float, name: str) -> elo_mmr_py.Contest:
    """Standings as the authors' 0-based inclusive [lo, hi] ranges, sorted by rank."""
    order = np.argsort(ranks, kind="stable")
    r = ranks[order]
    lo = np.searchsorted(r, r, side="left")
    hi = np.searchsorted(r, r, side="right") - 1
    standings = list(zip([names[i] for i in order.tolist()], lo.tolist(), hi.tolist()))
    return elo_mmr_py.Contest(standings, name=name, time_seconds=int(time_s))


def contest_of(rnd: RoundResult) -> elo_mmr_py.Contest:
    return to_contest(rnd.players(), rnd.ranks(), rnd.occurred_at, rnd.round_id)


def rate(seconds: float, participations: int) -> float:
    return participations / seconds if seconds > 0 else float("inf")


def report(label: str, ours: dict[str, float], ref: dict[str, float | str], n: int) -> None:
    for name in PRESETS:
        mine = ours[name]
        theirs = ref[name]
        if isinstance(theirs, str):
            print(f"  {label:<28} {name:<9} ours {mine:>8.2f} s ({rate(mine, n):>12,.0f}/s)   ref {theirs}")
        else:
            print(f"  {label:<28} {name:<9} ours {mine:>8.2f} s ({rate(mine, n):>12,.0f}/s)   "
                  f"ref {theirs:>8.2f} s ({rate(theirs, n):>12,.0f}/s)   ours/ref speed {theirs / mine:6.2f}x")


def bench_synthetic(spec: dict[str, int]) -> None:
    rounds = list(synthetic_rounds(**spec))
    n = sum(r.field_size for r in rounds)
    contests = [contest_of(r) for r in rounds]
    ours: dict[str, float] = {}
    ref: dict[str, float | str] = {}
    for name in PRESETS:
        t = time.perf_counter()
        replay(rounds, preset(name), keep_rounds=False)
        ours[name] = time.perf_counter() - t
        rater = elo_mmr_py.Rater(elo_mmr_py.EloMmrConfig(name))
        t = time.perf_counter()
        rater.extend(contests)
        ref[name] = time.perf_counter() - t
    print(f"(a) synthetic §6.1: {spec['n_players']:,} players, {spec['n_rounds']} rounds of "
          f"{spec['round_size']:,} = {n:,} participations")
    report("synthetic", ours, ref, n)


def bench_single_rounds(sizes: tuple[int, ...], max_ref_seconds: float) -> None:
    print("(b) one round after a warm-up round (distinct ratings), rate_round / Rater.add")
    previous_ref: dict[str, tuple[int, float]] = {}
    for n in sizes:
        rng = np.random.default_rng(n)
        names = [f"p{i}" for i in range(n)]
        warm_ranks = rng.permutation(n) + 1
        ranks = rng.permutation(n) + 1
        ours: dict[str, float] = {}
        ref: dict[str, float | str] = {}
        for name in PRESETS:
            params = preset(name)
            warm = rate_round(PlayerBatch.new(n, params), warm_ranks, params, time=0.0).after
            t = time.perf_counter()
            rate_round(warm, ranks, params, time=ROUND_GAP_S)
            ours[name] = time.perf_counter() - t

            exponent = 2 if params.subsample_size is None else 1
            if name in previous_ref:
                m, secs = previous_ref[name]
                estimate = secs * (n / m) ** exponent
                if estimate > max_ref_seconds:
                    ref[name] = f"skipped: estimated {estimate:,.0f} s (O(n^{exponent}) from n={m:,})"
                    continue
            rater = elo_mmr_py.Rater(elo_mmr_py.EloMmrConfig(name))
            rater.add(to_contest(names, warm_ranks, 0.0, "warm-up"))
            contest = to_contest(names, ranks, ROUND_GAP_S, "timed")
            t = time.perf_counter()
            rater.add(contest)
            ref[name] = time.perf_counter() - t
            previous_ref[name] = (n, ref[name])
        report(f"single round n={n:,}", ours, ref, n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes only (smoke run)")
    parser.add_argument("--max-ref-seconds", type=float, default=DEFAULT_MAX_REF_SECONDS)
    args = parser.parse_args()
    print(f"date {time.strftime('%Y-%m-%d %H:%M %Z')}  nproc {os.cpu_count()}  cpu {cpu_model()}")
    print(f"python {platform.python_version()}  numpy {np.__version__}  elo_mmr_py {elo_mmr_py.__version__}")
    bench_synthetic(QUICK_SYNTHETIC if args.quick else SYNTHETIC)
    bench_single_rounds((1_000, 10_000) if args.quick else SINGLE_ROUND_SIZES, args.max_ref_seconds)


if __name__ == "__main__":
    main()
