"""Phase one's per-opponent terms (Section 3.1, Algorithm 3 first line; ``elo_mmr.rs: Term``).

Opponent j (mean ``mu``, ``delta = sqrt(sigma'^2 + beta^2)``) adds to Q_i a LOSS term if ranked
strictly better, a WIN term if strictly worse, a TIE term if tied (j = i included); all decrease
in x and loss <= tie <= win (Lemma 5.1/Theorem 5.2).

* logistic: with c = (pi/sqrt 3)/delta, b(x) = -c tanh((x - mu) c/2):
  loss = b - c, win = b + c, tie = 2b (a full win plus a full loss; b with ``split_ties``).
* gaussian (Elo-MMchi), z = (x - mu)/delta: loss = pdf/(cdf - 1), win = pdf/cdf,
  tie = d/dx log pdf = -z/delta (split ties: the mean of win and loss); finite in the tails (erfcx).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.special import erfcx

from .state import TANH_MULTIPLIER

INV_SQRT2 = 1.0 / math.sqrt(2.0)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def logistic_terms(x: np.ndarray, mu: np.ndarray, delta: np.ndarray, split_ties: bool) -> tuple[np.ndarray, ...]:
    """(loss, win, tie, loss', win', tie') of logistic opponents, broadcasting x against mu/delta."""
    c = TANH_MULTIPLIER / delta
    z = (x - mu) * (0.5 * c)
    b = -c * np.tanh(z)
    tie_mult = 1.0 if split_ties else 2.0
    with np.errstate(over="ignore"):
        sech2 = np.cosh(z) ** -2.0  # not 1 - tanh^2, which underflows to 0 already at |z| ~ 19
    bp = -sech2 * (0.5 * c * c)
    return b - c, b + c, tie_mult * b, bp, bp, tie_mult * bp


def gaussian_ratios(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pdf/cdf, pdf/(cdf - 1)) at z, in z units, from ONE erfcx: with y = |z|/sqrt 2,
    pdf/cdf(-|z|) = sqrt(2/pi)/erfcx(y), pdf/cdf(|z|) = sqrt(2/pi)/erfcx(-y) and
    erfcx(-y) = 2 exp(y^2) - erfcx(y) (no cancellation); pdf/(cdf(z) - 1) = -pdf/cdf(-z)."""
    y = np.abs(z) * INV_SQRT2
    scaled = erfcx(y)
    np.square(y, out=y)
    with np.errstate(over="ignore"):
        np.exp(y, out=y)
        y *= 2.0
    y -= scaled  # erfcx(-|z|/sqrt 2)
    near = np.divide(SQRT_2_OVER_PI, y, out=y)  # pdf/cdf at +|z|: the small one
    far = np.divide(SQRT_2_OVER_PI, scaled, out=scaled)  # pdf/cdf at -|z|
    positive = z >= 0
    r_win = np.where(positive, near, far)
    r_loss = -np.where(positive, far, near)
    return r_win, r_loss


def gaussian_win_ratio(z: np.ndarray) -> np.ndarray:
    """pdf/cdf at z (z units) = sqrt(2/pi)/erfcx(-z/sqrt 2): one special function, no
    cancellation; the loss ratio pdf/(cdf - 1) at z is -gaussian_win_ratio(-z)."""
    y = np.multiply(z, -INV_SQRT2)
    with np.errstate(over="ignore"):
        erfcx(y, out=y)
    ratio: np.ndarray = np.divide(SQRT_2_OVER_PI, y, out=y)
    return ratio


def gaussian_terms(x: np.ndarray, mu: np.ndarray, delta: np.ndarray, split_ties: bool) -> tuple[np.ndarray, ...]:
    """(loss, win, tie, loss', win', tie') of Gaussian opponents (Elo-MMchi)."""
    z = (x - mu) / delta
    r_win, r_loss = gaussian_ratios(z)
    win = r_win / delta
    loss = r_loss / delta
    tie = 0.5 * (win + loss) if split_ties else -z / delta
    d2 = delta * delta
    win_p = (-z * r_win - r_win * r_win) / d2
    loss_p = (-z * r_loss - r_loss * r_loss) / d2
    tie_p = 0.5 * (win_p + loss_p) if split_ties else np.broadcast_to(-1.0 / d2, np.shape(z))
    return loss, win, tie, loss_p, win_p, tie_p


def terms_for(variant: str) -> Callable[..., tuple[np.ndarray, ...]]:
    """The term function of a variant."""
    return gaussian_terms if variant == "gaussian" else logistic_terms
