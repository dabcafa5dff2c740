"""Phase two's belief update (Algorithm 3, second half) of memoryless rows, vectorised (finite rho
runs ``kernels.update_row``), from the diffused belief and the performance p (precision 1/beta^2):

* logistic (Elo-MMR(inf)): append TanhTerm(p, beta); mu is the zero of
  L'(x) = w0 (x - mu0) + sum_k w_out_k tanh((x - p_k) w_arg_k) (Eq. 10, ``robust_average``);
* gaussian: the Gaussian factor absorbs N(p, beta^2) and mu is its mean;
* both: sigma_new = (sigma'^-2 + beta^-2)^-1/2 (Eq. 8 applied incrementally, as the reference).
"""

from __future__ import annotations

import numpy as np

from .kernels import robust_average_roots
from .params import Params
from .state import TANH_MULTIPLIER, PlayerBatch


def robust_average(batch: PlayerBatch) -> np.ndarray:
    """Every player's zero of L'(x) = -mu0 w0 + w0 x + sum_k w_out_k tanh((x - p_k) w_arg_k)
    (Algorithm 3's second zero), compiled, from the prior ``mu`` (the new one is close)."""
    roots: np.ndarray = robust_average_roots(
        np.ascontiguousarray(batch.p), np.ascontiguousarray(batch.w_arg), np.ascontiguousarray(batch.w_out),
        np.asarray(batch.n_factors, dtype=np.int64), batch.w0, batch.mu0, batch.mu)
    return roots


def update_beliefs(
    diffused: PlayerBatch, performance: np.ndarray, beta: float | np.ndarray, params: Params
) -> PlayerBatch:
    """Algorithm 3's second half on a collapsed (memoryless) batch, as a new batch; ``beta``: per round or row."""
    out = diffused.copy()
    performance = np.asarray(performance, dtype=float)
    if params.variant == "gaussian":
        wp = beta**-2
        out.mu0 = (out.w0 * out.mu0 + wp * performance) / (out.w0 + wp)
        out.w0 = out.w0 + wp
        out.mu = out.mu0.copy()
    else:
        # append TanhTerm(p, beta) (w_out = (pi/sqrt 3)/beta, w_arg = w_out/2) after each player's last factor
        need = int(out.n_factors.max(initial=0)) + 1
        if out.p.shape[1] < need:
            out.widen(need)
        rows = np.arange(len(out))
        w = TANH_MULTIPLIER / beta
        out.p[rows, out.n_factors] = performance
        out.w_arg[rows, out.n_factors] = 0.5 * w
        out.w_out[rows, out.n_factors] = w
        out.n_factors += 1
        out.mu = robust_average(out)
    out.sigma = (diffused.sigma**-2 + beta**-2) ** -0.5
    return out
