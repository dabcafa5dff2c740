"""Vectorised root solving: the authors' safeguarded Newton (``numerical.rs: solve_newton``),
run for many independent monotone equations at once."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

NEWTON_SHRINK = 0.75
"""A Newton guess is clamped to the 75 % of the bracket nearest the side it came from."""
MAX_NEWTON_ITER = 400
"""Safety cap; the reference has none and stops at floating-point resolution (< ~60 steps)."""

# f(x, idx) -> (value, derivative) of the equations `idx` at points `x` (same length).
Equations = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def solve_newton(f: Equations, lo: np.ndarray, hi: np.ndarray, *, increasing: bool) -> np.ndarray:
    """Zero of each monotone (increasing or decreasing) equation on its bracket [lo, hi].

    Exactly the reference's rule per equation: start at the midpoint; after evaluating (s, s') at
    the guess, the Newton point x - s/s' moves the bracket's upper end to the guess if it lies
    below, else the lower end; the next guess is the Newton point clamped to the 75 % of the new
    bracket adjacent to the old guess.  An equation stops once its guess is no longer strictly
    inside its bracket (floating-point resolution).  All equations still running are evaluated
    together in one call of ``f``.  ``increasing`` gives the monotone direction, used only when
    the derivative underflows to 0 far in a tail (the step then goes the right way, clamped).
    """
    tiny = np.finfo(float).tiny if increasing else -np.finfo(float).tiny
    lo = np.array(lo, dtype=float, copy=True)
    hi = np.array(hi, dtype=float, copy=True)
    guess = 0.5 * (lo + hi)
    result = guess.copy()
    active = np.arange(guess.shape[0])
    for _ in range(MAX_NEWTON_ITER):
        if active.size == 0:
            break
        g = guess[active]
        s, sp = f(g, active)
        sp = np.where(sp == 0.0, tiny, sp)
        with np.errstate(divide="ignore", invalid="ignore"):
            ext = g - s / sp
        ext = np.where(np.isnan(ext), g, ext)  # s == s' == 0: the guess is the root
        down = ext < g
        a = np.where(down, lo[active], g)
        b = np.where(down, g, hi[active])
        span = NEWTON_SHRINK * (b - a)
        nxt = np.where(down, np.clip(ext, b - span, b), np.clip(ext, a, a + span))
        lo[active], hi[active], guess[active] = a, b, nxt
        done = (a >= nxt) | (nxt >= b)
        result[active[done]] = nxt[done]
        active = active[~done]
    result[active] = guess[active]
    return result
