"""What ``stream simulate`` reports from its records: (a) fairness, the share of matches whose
true win probability lies within 35-65 %, by games played (seed 001's Halo 2 figure); (b) pair
accuracy of the ratings against the true skills, by games per player; (c) waits p50/p99;
(d) calibration, predicted against realised win rate."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .simulate import Record

FAIR = (0.35, 0.65)
GAME_BUCKETS = ((0, 4), (5, 9), (10, 14), (15, 19), (20, 25), (26, 10**9))
HEADLINE = (10, 25)
"""Games played (by the less experienced player) of the headline fairness figure."""
CALIBRATION_BINS = np.linspace(0.0, 1.0, 11)


@dataclass(frozen=True)
class Summary:
    """One strategy's figures."""

    strategy: str
    matches: int
    fair: float
    """Fair share over matches whose players have each played HEADLINE games."""
    fair_by_games: list[tuple[str, float, int]]
    accuracy: list[tuple[float, float]]
    wait_p50: float
    wait_p99: float
    timeouts: int
    calibration: list[tuple[float, float, int]]
    """(mean predicted, realised win rate, matches) per bin of predicted probability."""
    calibration_error: float
    """Match-weighted mean |predicted - realised| over the bins."""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def fair_share(record: Record, low: int, high: int) -> tuple[float, int]:
    """Share of fair matches among those whose less experienced player had low..high games."""
    true_p = np.asarray(record.true_p)
    games = np.asarray(record.games)
    chosen = (games >= low) & (games <= high)
    fair = (true_p[chosen] >= FAIR[0]) & (true_p[chosen] <= FAIR[1])
    return (float(fair.mean()) if chosen.any() else float("nan")), int(chosen.sum())


def summarise(record: Record) -> Summary:
    """The figures of one strategy's run."""
    predicted = np.asarray(record.predicted)
    won = np.asarray(record.won, dtype=float)
    bins = np.clip(np.digitize(predicted, CALIBRATION_BINS) - 1, 0, len(CALIBRATION_BINS) - 2)
    calibration = []
    error = 0.0
    for k in range(len(CALIBRATION_BINS) - 1):
        inside = bins == k
        if inside.any():
            p, w = float(predicted[inside].mean()), float(won[inside].mean())
            calibration.append((p, w, int(inside.sum())))
            error += abs(p - w) * inside.sum()
    waits = np.asarray(record.waits) if record.waits else np.zeros(1)
    by_games = []
    for low, high in GAME_BUCKETS:
        share, count = fair_share(record, low, high)
        by_games.append((f"{low}-{high}" if high < 10**9 else f"{low}+", share, count))
    return Summary(
        strategy=record.strategy, matches=len(record.true_p), fair=fair_share(record, *HEADLINE)[0],
        fair_by_games=by_games, accuracy=record.accuracy, wait_p50=float(np.percentile(waits, 50)),
        wait_p99=float(np.percentile(waits, 99)), timeouts=record.timeouts, calibration=calibration,
        calibration_error=error / max(len(predicted), 1))


def report(summaries: dict[str, Summary]) -> str:
    """The text ``stream simulate`` prints."""
    lines = [f"(a) fair share: true win probability within {FAIR[0]:.0%}-{FAIR[1]:.0%}, by games played "
             f"(the less experienced player's); headline: games {HEADLINE[0]}-{HEADLINE[1]}"]
    names = list(summaries)
    buckets = [b for b, _, _ in next(iter(summaries.values())).fair_by_games]
    lines.append(f"  {'strategy':<12}{'headline':>10}" + "".join(f"{b:>9}" for b in buckets) + f"{'matches':>9}")
    for name in names:
        s = summaries[name]
        lines.append(f"  {name:<12}{s.fair:>10.3f}" + "".join(f"{v:>9.3f}" for _, v, _ in s.fair_by_games)
                     + f"{s.matches:>9}")
    if "ideal" in summaries:
        ideal = summaries["ideal"].fair
        lines.append("  relative to ideal: " + ", ".join(f"{n} {summaries[n].fair / ideal:.2f}" for n in names))
    lines.append("(b) pair accuracy of the ratings against the true skills, by mean games per player")
    checkpoints = sorted({round(g) for s in summaries.values() for g, _ in s.accuracy})
    lines.append(f"  {'strategy':<12}" + "".join(f"{g:>7}" for g in checkpoints))
    for name in names:
        acc = {round(g): a for g, a in summaries[name].accuracy}
        lines.append(f"  {name:<12}" + "".join(f"{acc[g]:>7.3f}" if g in acc else f"{'':>7}" for g in checkpoints))
    lines.append("(c) waits (s) of matched tickets; time-outs")
    for name in names:
        s = summaries[name]
        lines.append(f"  {name:<12} p50 {s.wait_p50:7.1f}  p99 {s.wait_p99:7.1f}  timeouts {s.timeouts}")
    lines.append("(d) calibration: predicted vs realised win rate of the first player (mean |gap|, per bin)")
    for name in names:
        s = summaries[name]
        bins = " ".join(f"{p:.2f}->{w:.2f}" for p, w, n in s.calibration if n >= 20)
        lines.append(f"  {name:<12} error {s.calibration_error:.3f}  {bins}")
    return "\n".join(lines)
