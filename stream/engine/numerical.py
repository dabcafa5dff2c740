"""Vectorised root solving of many independent monotone equations at once (a safeguarded Newton on
the authors' bracket, ``numerical.rs``), and the engine's thread pool."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import TypeVar

import numpy as np

T = TypeVar("T")
R = TypeVar("R")

MAX_NEWTON_ITER = 400
"""Safety cap (the reference has none)."""

# f(x, idx) -> (value, derivative) of the equations `idx` at points `x` (same length).
Equations = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
NEWTON_STEP_TOL = 1e-7
"""Rating points: a Newton step this small ends the iteration; the error left after it is
~ step^2 |f''/2f'| (quadratic convergence), far below 1e-12 for phase one's equations."""
BRACKET_RTOL = 4.0 * np.finfo(float).eps
"""A bracket this narrow (relative to max(1, |x|)) is floating-point resolution: stop."""


def solve_bracketed(
    f: Equations, lo: np.ndarray, hi: np.ndarray, guess: np.ndarray, *, increasing: bool
) -> np.ndarray:
    """Zero of each monotone equation on its bracket [lo, hi] from ``guess``: safeguarded Newton (rtsafe;
    bisection for a step outside the bracket or cycling on a tanh's shoulders) to ``NEWTON_STEP_TOL``."""
    # rows: lower end, upper end, guess, |last step|, |step before| (one gather/scatter each)
    state = np.empty((5, np.shape(guess)[0]))
    state[0], state[1] = lo, hi
    state[2] = np.minimum(np.maximum(guess, state[0]), state[1])
    state[3] = state[4] = state[1] - state[0]
    active = np.arange(state.shape[1])
    for _ in range(MAX_NEWTON_ITER):
        if active.size == 0:
            break
        la, ha, xa, last, older = state[:, active]
        s, sp = f(xa, active)
        root_above = (s < 0) if increasing else (s > 0)
        a = np.where(root_above, xa, la)
        b = np.where(root_above, ha, xa)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = s / sp
        np.copyto(step, 0.0, where=s == 0.0)  # at the root (also when s' == 0 there)
        size = np.abs(step)
        converged = size <= NEWTON_STEP_TOL  # False for nan
        nxt = xa - step
        newton_ok = (nxt > a) & (nxt < b) & (size <= 0.5 * older)  # False for nan/inf too
        newton_ok |= converged
        width = b - a
        nxt = np.minimum(np.maximum(np.where(newton_ok, nxt, a + 0.5 * width), a), b)
        done = converged | (width <= BRACKET_RTOL * np.maximum(1.0, np.abs(nxt)))
        state[:, active] = a, b, nxt, np.where(newton_ok, size, 0.5 * width), last
        active = active[~done]
    roots: np.ndarray = state[2].copy()
    return roots


MAX_THREADS = 4
"""Threads for independent N-sized evaluations (numpy ufuncs release the GIL)."""
PARALLEL_MIN_ELEMENTS = 20_000
"""Smaller evaluations run on the calling thread (thread hand-off costs more than it saves)."""


def worth_threads(elements: int) -> bool:
    """Whether evaluations over ``elements`` array elements should go to the thread pool."""
    return elements >= PARALLEL_MIN_ELEMENTS


def _pool() -> ThreadPoolExecutor | None:
    """This process's pool (a forked child gets its own: pool threads do not survive fork)."""
    return _pool_of(os.getpid())


@cache
def _pool_of(pid: int) -> ThreadPoolExecutor | None:
    threads = min(MAX_THREADS, os.cpu_count() or 1)
    return ThreadPoolExecutor(threads, thread_name_prefix="engine") if threads > 1 else None


def map_points(fn: Callable[[T], R], items: Iterable[T], *, parallel: bool = True) -> list[R]:
    """``[fn(item) for item in items]``, on a small thread pool when ``parallel``; each item on one
    thread, so the floats do not depend on the thread count (pipeline and replay must agree)."""
    pool = _pool() if parallel else None
    if pool is None:
        return [fn(item) for item in items]
    return list(pool.map(fn, items))


def prefix_sums(values: np.ndarray) -> np.ndarray:
    """[0, v0, v0 + v1, ..., sum(values)] summed in blocks of ~sqrt(n): ~2 n^(1/4) roundings instead
    of ~sqrt(n), which keeps phase one's Chebyshev fits above their rounding plateau."""
    n = values.shape[0]
    block = max(1, int(math.isqrt(n)))
    n_blocks = -(-n // block)
    padded = np.zeros(n_blocks * block)
    padded[:n] = values
    inner = np.cumsum(padded.reshape(n_blocks, block), axis=1)
    offsets = np.concatenate(([0.0], np.cumsum(inner[:, -1])[:-1]))
    inner += offsets[:, None]
    out = np.empty(n + 1)
    out[0] = 0.0
    out[1:] = inner.ravel()[:n]
    return out
