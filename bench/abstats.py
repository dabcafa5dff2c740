"""Same-run A/B statistics the benchmarks share: the order of interleaved pairs, and a distribution-free
confidence interval of a median (the sign test's order statistics), so an A/B's median ratio is
printed with its interval next to an A/A control's."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

CONFIDENCE = 0.95


@dataclass(frozen=True)
class MedianCI:
    """A sample's median and a confidence interval of the population median."""

    n: int
    median: float
    low: float
    high: float
    coverage: float
    """The interval's exact coverage (the sign test's: at least the confidence asked for when n allows)."""

    def ratio_text(self) -> str:
        """``+1.2 % [-0.4, +2.9] (95 %, 12 pairs)`` for a median of ratios (shown as ratio - 1)."""
        return (f"{self.median - 1:+.1%} [{self.low - 1:+.1%}, {self.high - 1:+.1%}] "
                f"({self.coverage:.0%}, {self.n} pairs)")


def median_ci(values: Sequence[float], confidence: float = CONFIDENCE) -> MedianCI:
    """The median of ``values`` and the sign test's interval [x_(k), x_(n+1-k)] (sorted, 1-based):
    the largest k whose two-sided binomial tail 2 P(Bin(n, 1/2) <= k-1) stays within 1 - confidence
    (no assumption on the distribution; with too few values for ``confidence``, the whole range and
    its coverage 1 - 2^(1-n))."""
    xs = sorted(float(v) for v in values)
    n = len(xs)
    if n == 0:
        return MedianCI(0, math.nan, math.nan, math.nan, 0.0)
    middle = (xs[(n - 1) // 2] + xs[n // 2]) / 2.0
    tail, k = 0.0, 0
    for j in range(n // 2):  # tail = P(Bin <= j); k = j + 1 while 2 * tail fits
        tail += math.comb(n, j) / 2.0**n
        if 2 * tail > 1 - confidence:
            break
        k = j + 1
    if k == 0:
        return MedianCI(n, middle, xs[0], xs[-1], 1.0 - 2.0 / 2.0**n if n > 1 else 0.0)
    below = sum(math.comb(n, j) for j in range(k)) / 2.0**n
    return MedianCI(n, middle, xs[k - 1], xs[n - k], 1.0 - 2 * below)


def pair_orders(pairs: int) -> list[tuple[str, str, bool]]:
    """The interleaved schedule of ``pairs`` A/B pairs and as many A/A pairs: (first, second, is A/A),
    A/B pairs alternating A B, B A, ... (ABBA: neither is always first) and each followed by an A/A
    pair X Y / Y X in the same alternation (X and Y the same settings), so the control meets the
    same drift and the same positions as the comparison."""
    out: list[tuple[str, str, bool]] = []
    for k in range(pairs):
        out.append(("A", "B", False) if k % 2 == 0 else ("B", "A", False))
        out.append(("X", "Y", True) if k % 2 == 0 else ("Y", "X", True))
    return out
