"""The Codeforces performance on states the oracle histories never reach (ratings spread over
thousands of points, roots near the solver's bounds): equal to a literal transcription of the
authors' ``compute_performance`` + ``robust_average`` (scalar loops, their Newton rule)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.engine.codeforces import CodeforcesParams, rate_round
from stream.engine.ratings import SOLVER_BOUNDS, TANH_MULTIPLIER, Ratings, tie_spans


def f64_div(a: float, b: float) -> float:
    """``a / b`` as Rust's f64 computes it (a zero divisor gives an infinity or NaN, no exception)."""
    if b != 0 or math.isnan(a):
        return a / b if b != 0 else math.nan
    return math.nan if a == 0 else math.copysign(math.inf, a) * math.copysign(1.0, b)


def f64_max(a: float, b: float) -> float:
    """Rust's ``f64::max``: the other operand when one is NaN."""
    return b if math.isnan(a) else a if math.isnan(b) else max(a, b)


def f64_min(a: float, b: float) -> float:
    """Rust's ``f64::min``: the other operand when one is NaN."""
    return b if math.isnan(a) else a if math.isnan(b) else min(a, b)


def authors_newton(f, lo: float, hi: float) -> float:  # type: ignore[no-untyped-def]
    """numerical.rs solve_newton, line by line (with f64 arithmetic: the derivative underflows to
    0 where every tanh term has saturated)."""
    guess = 0.5 * (lo + hi)
    while True:
        s, sp = f(guess)
        extrapolate = guess - f64_div(s, sp)
        if extrapolate < guess:
            hi = guess
            guess = f64_min(f64_max(extrapolate, hi - 0.75 * (hi - lo)), hi)
        else:
            lo = guess
            guess = f64_min(f64_max(extrapolate, lo), lo + 0.75 * (hi - lo))
        if lo >= guess or guess >= hi:
            return guess


def authors_performance(mu: list[float], lo: list[int], hi: list[int], sig_perf: float) -> list[float]:
    n = len(mu)
    w = TANH_MULTIPLIER / sig_perf
    out = []
    for i in range(n):
        ac_rank = 0.5 * (lo[i] / sig_perf - (n - 1 - hi[i]) / sig_perf + n / sig_perf + 1 / sig_perf)
        ex_rank = 0.5 / sig_perf + sum(
            (0.5 + 0.5 * math.tanh(0.5 * TANH_MULTIPLIER * (m - mu[i]) / sig_perf)) / sig_perf for m in mu)
        geo_offset = 2 * math.sqrt(ac_rank * ex_rank) - 1 / sig_perf - n / sig_perf
        offset = TANH_MULTIPLIER * geo_offset

        def f(x: float) -> tuple[float, float]:
            t = [math.tanh((x - m) * w * 0.5) for m in mu]
            return offset + sum(w * v for v in t), sum((1 - v * v) * w * 0.5 * w for v in t)

        out.append(authors_newton(f, *SOLVER_BOUNDS))
    return out


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 12).flatmap(lambda n: st.tuples(
    st.lists(st.floats(-5000, 8500), min_size=n, max_size=n),
    st.lists(st.integers(1, n), min_size=n, max_size=n).filter(lambda r: len(set(r)) > 1))))
def test_performance_equals_the_authors_on_extreme_states(case: tuple[list[float], list[int]]) -> None:
    mu, ranks = case
    n = len(mu)
    before = Ratings(np.array(mu), np.full(n, 350.0), np.zeros(n, dtype=np.int64))
    ours = rate_round(before, np.array(ranks), CodeforcesParams()).performance
    assert ours is not None
    lo, hi = tie_spans(np.array(ranks))
    theirs = authors_performance(mu, lo.tolist(), hi.tolist(), CodeforcesParams().beta)
    assert np.allclose(ours, theirs, rtol=0, atol=1e-6), (ours, theirs)
