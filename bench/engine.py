"""Engine benchmark: our numpy engine against the authors' Rust code (elo_mmr_py 2.0.0).

Run by hand:  python bench/engine.py [--quick] [--max-ref-seconds 180] [--only a,b,c,d]
(tests/bench runs a tiny ``--quick`` smoke version.)

(a) the paper's §6.1 synthetic dataset (10,000 players, 50 rounds of 2,500) through
    ``stream.batch.replay`` and through ``elo_mmr_py.Rater.extend``;
(b) single rounds of 10^4, 10^5, 10^6 players.  Each size first rates a warm-up round (all
    newcomers, so every player ends with a distinct rating), then times one more round with a
    fresh random ranking: otherwise all opponents share one (mu, sigma) and the authors' code
    merges them into a single term, which measures nothing.
(c) the contest-history profile (``stream/batch/profiles.py``): our ``paper-codeforces`` and
    the authors' ``mmr-fast`` with the same parameters (weight_limit 0.23, sig_limit 54,
    subsample 100, bucket 2; the binding has no rho: it runs rho = 1), our exact ``mmr`` and
    our default preset; accuracy (pair-exp etc., ``Metrics``) of ours from the same timed runs
    (our times include the metrics);
(d) duels and 10-player lobbies from a pool (``--profile matches``) through replay, against
    openskill.py's ``PlackettLuce().rate`` in a plain loop on the same rounds.
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

from stream.batch import Metrics, replay, synthetic_rounds  # noqa: E402
from stream.batch.profiles import contest_history_rounds, match_rounds  # noqa: E402
from stream.contracts import RoundResult  # noqa: E402
from stream.engine import DEFAULT_PRESET, PlayerBatch, preset, rate_round, warm_up  # noqa: E402

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


HISTORY_SCALE, QUICK_HISTORY_SCALE = 1.0, 0.01
MATCHES = ((2, 2_000, 10_000), (10, 2_000, 3_000))
"""(round size, pool, rounds) of the match workloads."""
QUICK_MATCHES = ((2, 100, 200), (10, 100, 60))
REF_FAST = dict(weight_limit=0.23, sig_limit=54.0, subsample_size=100, subsample_bucket=2.0)
"""elo_mmr_py mmr-fast with paper-codeforces' parameters (the binding exposes no rho)."""


def timed_replay(rounds: list[RoundResult], name: str) -> tuple[float, dict[str, float | int]]:
    """Seconds to replay ``rounds`` with metrics (included in the time), and the metrics."""
    metrics = Metrics(len(rounds))
    t = time.perf_counter()
    replay(rounds, preset(name), keep_rounds=False, metrics=metrics)
    return time.perf_counter() - t, metrics.summary()


def timed_reference(contests: list[elo_mmr_py.Contest], config: elo_mmr_py.EloMmrConfig) -> float:
    rater = elo_mmr_py.Rater(config)
    t = time.perf_counter()
    rater.extend(contests)
    return time.perf_counter() - t


def bench_history(scale: float, max_ref_seconds: float) -> None:
    rounds = list(contest_history_rounds(scale))
    n = sum(r.field_size for r in rounds)
    players = len({p for r in rounds for p in r.players()})
    print(f"(c) contest history (profile contest-history, scale {scale}): {len(rounds):,} rounds, {players:,} "
          f"players, {n:,} participations; ours include metrics")
    contests = [contest_of(r) for r in rounds]
    ref_fast = timed_reference(contests, elo_mmr_py.EloMmrConfig("mmr-fast", **REF_FAST))
    print(f"  reference mmr-fast (0.23, 54, 100, 2)  {ref_fast:8.2f} s ({rate(ref_fast, n):>10,.0f}/s)")
    largest = max(r.field_size for r in rounds)
    estimate = sum(r.field_size**2 for r in rounds) * 100 * 2e-9  # ~100 Newton steps of O(n^2) terms
    if estimate <= max_ref_seconds:
        ref_exact: float | str = timed_reference(contests, elo_mmr_py.EloMmrConfig("mmr"))
        print(f"  reference mmr (exact)                  {ref_exact:8.2f} s ({rate(ref_exact, n):>10,.0f}/s)")
    else:
        ref_exact = f"skipped: estimated {estimate:,.0f} s (O(n^2) per round, rounds up to {largest:,})"
        print(f"  reference mmr (exact)                  {ref_exact}")
    print("  | ours | time | rate | vs ref mmr-fast | pair-exp | pair-all | rank-exp |")
    print("  |---|---|---|---|---|---|---|")
    names = ["paper-codeforces", "mmr", DEFAULT_PRESET] if DEFAULT_PRESET != "mmr" else ["paper-codeforces", "mmr"]
    for name in names:
        secs, m = timed_replay(rounds, name)
        print(f"  | {name} | {secs:.2f} s | {rate(secs, n):,.0f}/s | {ref_fast / secs:.2f}x | "
              f"{m['pair_exp']:.2f} | {m['pair_all']:.2f} | {m['rank_exp']:.2f} |")


def openskill_loop(rounds: list[RoundResult]) -> float:
    """Seconds for PlackettLuce().rate on every round in a plain loop (ratings kept per id)."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    ratings: dict[str, object] = {}
    t = time.perf_counter()
    for rnd in rounds:
        ids = rnd.players()
        teams = [[ratings.get(p) or model.rating(name=p)] for p in ids]
        rated = model.rate(teams, ranks=rnd.ranks().tolist())
        for p, team in zip(ids, rated):
            ratings[p] = team[0]
    return time.perf_counter() - t


def bench_matches(specs: tuple[tuple[int, int, int], ...]) -> None:
    print("(d) matches (profile matches) through replay (mmr, and the default preset) vs openskill "
          "PlackettLuce().rate in a loop, same rounds")
    print("  | round size | pool | rounds | ours mmr | ours default | openskill | mmr / openskill speed |")
    print("  |---|---|---|---|---|---|---|")
    for size, pool, n_rounds in specs:
        rounds = list(match_rounds(pool, n_rounds, size))
        times = []
        for name in ("mmr", DEFAULT_PRESET):
            t = time.perf_counter()
            replay(rounds, preset(name), keep_rounds=False)
            times.append(time.perf_counter() - t)
        theirs = openskill_loop(rounds)
        print(f"  | {size} | {pool:,} | {n_rounds:,} | {times[0]:.3f} s ({n_rounds / times[0]:,.0f}/s) | "
              f"{times[1]:.3f} s ({n_rounds / times[1]:,.0f}/s) | {theirs:.3f} s ({n_rounds / theirs:,.0f}/s) | "
              f"{theirs / times[0]:.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes only (smoke run)")
    parser.add_argument("--max-ref-seconds", type=float, default=DEFAULT_MAX_REF_SECONDS)
    parser.add_argument("--only", default="a,b,c,d", help="comma-separated parts to run (a, b, c, d)")
    parser.add_argument("--history-scale", type=float, default=None, help="contest-history scale for (c)")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    warm_up()  # compiled loops loaded (or compiled, first run after installation) before any timing
    print(f"date {time.strftime('%Y-%m-%d %H:%M %Z')}  nproc {os.cpu_count()}  cpu {cpu_model()}")
    print(f"python {platform.python_version()}  numpy {np.__version__}  elo_mmr_py {elo_mmr_py.__version__}")
    if "a" in parts:
        bench_synthetic(QUICK_SYNTHETIC if args.quick else SYNTHETIC)
    if "b" in parts:
        bench_single_rounds((500, 2_000) if args.quick else SINGLE_ROUND_SIZES, args.max_ref_seconds)
    if "c" in parts:
        scale = args.history_scale or (QUICK_HISTORY_SCALE if args.quick else HISTORY_SCALE)
        bench_history(scale, args.max_ref_seconds)
    if "d" in parts:
        bench_matches(QUICK_MATCHES if args.quick else MATCHES)


if __name__ == "__main__":
    main()
