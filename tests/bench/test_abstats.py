"""bench/abstats.py: the sign test's interval of a median and the interleaved A/B + A/A schedule."""

from __future__ import annotations

import math
import sys
from pathlib import Path

from hypothesis import given, strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from abstats import median_ci, pair_orders  # noqa: E402


def binomial_tail(n: int, k: int) -> float:
    """P(Bin(n, 1/2) <= k)."""
    return sum(math.comb(n, j) for j in range(k + 1)) / 2.0**n


def test_twenty_pairs_give_the_sixth_and_fifteenth_values() -> None:
    ci = median_ci([float(v) for v in range(20, 0, -1)])  # 1 .. 20, shuffled order
    assert (ci.low, ci.median, ci.high) == (6.0, 10.5, 15.0)
    assert ci.coverage == 1 - 2 * binomial_tail(20, 5) and ci.coverage >= 0.95


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=60))
def test_the_interval_is_the_widest_order_statistics_the_confidence_allows(values: list[float]) -> None:
    """Coverage at least 95 % when n allows, and one step narrower would fall below it."""
    ci = median_ci(values)
    xs = sorted(values)
    n = len(xs)
    assert ci.low <= ci.median <= ci.high and ci.n == n
    k = next((i + 1 for i in range(n) if xs[i] == ci.low), 1)
    if n >= 6:
        assert ci.coverage >= 0.95
        assert ci.low in xs and ci.high in xs
        narrower = 1 - 2 * binomial_tail(n, k)  # [x_(k+1), x_(n-k)]
        assert narrower < 0.95 or xs[k] == ci.low
    else:
        assert (ci.low, ci.high) == (xs[0], xs[-1])


def test_pairs_alternate_their_order_and_each_ab_pair_has_its_aa_control() -> None:
    assert pair_orders(3) == [("A", "B", False), ("X", "Y", True), ("B", "A", False), ("Y", "X", True),
                              ("A", "B", False), ("X", "Y", True)]
