"""Phase one's per-opponent terms (Section 3.1, Algorithm 3 first line; ``elo_mmr.rs: Term``).

For an opponent j with prior mean ``mu`` and ``delta = sqrt(sigma'^2 + beta^2)``, player i's
equation Q_i(x) = 0 gets a LOSS term if j ranked strictly better, a WIN term if strictly worse,
and a TIE term if tied (including j = i).  Every term is decreasing in x, and
loss <= tie <= win pointwise (this ordering is what makes better ranks give higher performances,
Lemma 5.1/Theorem 5.2).

* logistic: with c = (pi/sqrt 3)/delta, b(x) = -c tanh((x - mu) c/2):
  loss = b - c, win = b + c, tie = 2b (a full win plus a full loss; b with ``split_ties``).
* gaussian (Elo-MMchi), z = (x - mu)/delta: loss = pdf/(cdf - 1), win = pdf/cdf,
  tie = d/dx log pdf = -z/delta (split ties: the mean of win and loss).  The ratios are computed
  from log-cdfs so they stay finite far in the tails.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr

from .state import TANH_MULTIPLIER

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def logistic_terms(
    x: np.ndarray, mu: np.ndarray, delta: np.ndarray, split_ties: bool, derivative: bool = True
) -> tuple[np.ndarray, ...]:
    """(loss, win, tie, loss', win', tie') of logistic opponents, broadcasting x against mu/delta.
    Without ``derivative`` only the three values are returned."""
    c = TANH_MULTIPLIER / delta
    z = (x - mu) * (0.5 * c)
    b = -c * np.tanh(z)
    tie_mult = 1.0 if split_ties else 2.0
    values = (b - c, b + c, tie_mult * b)
    if not derivative:
        return values
    with np.errstate(over="ignore"):
        sech2 = np.cosh(z) ** -2.0  # not 1 - tanh^2, which underflows to 0 already at |z| ~ 19
    bp = -sech2 * (0.5 * c * c)
    return (*values, bp, bp, tie_mult * bp)


def gaussian_terms(
    x: np.ndarray, mu: np.ndarray, delta: np.ndarray, split_ties: bool, derivative: bool = True
) -> tuple[np.ndarray, ...]:
    """(loss, win, tie, loss', win', tie') of Gaussian opponents (Elo-MMchi)."""
    z = (x - mu) / delta
    log_pdf = -0.5 * z * z - LOG_SQRT_2PI
    r_win = np.exp(log_pdf - log_ndtr(z))  # pdf/cdf in z units
    r_loss = -np.exp(log_pdf - log_ndtr(-z))  # pdf/(cdf - 1)
    win = r_win / delta
    loss = r_loss / delta
    tie = 0.5 * (win + loss) if split_ties else -z / delta
    if not derivative:
        return loss, win, tie
    d2 = delta * delta
    win_p = (-z * r_win - r_win * r_win) / d2
    loss_p = (-z * r_loss - r_loss * r_loss) / d2
    tie_p = 0.5 * (win_p + loss_p) if split_ties else np.broadcast_to(-1.0 / d2, np.shape(z))
    return loss, win, tie, loss_p, win_p, tie_p


def terms_for(variant: str):
    """The term function of a variant."""
    return gaussian_terms if variant == "gaussian" else logistic_terms
