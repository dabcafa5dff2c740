"""The authors' opponent subsampling for huge rounds (``elo_mmr.rs``, ``subsample_size`` and
``subsample_bucket``), used by the ``-fast`` presets.

1. Opponent terms N(mu, delta) sharing a (bucket(mu), bucket(delta)) pair, bucket(x) =
   round(x / width) half away from zero (Rust's ``f64::round``), merge into one (mean mu, mean
   delta; the reference's running mean to rounding) that keeps its members' ranks.
2. Player i uses a window of ~``subsample_size`` consecutive merged terms around the first whose
   mu-bucket is >= bucket(mu_i), shifted inwards at the edges; each term counts
   #better x loss + #tied x tie + #worse x win.
Each equation is solved by a bracketed Newton from near its root (the same root as the
reference's rule): logistic compiled per player (``kernels``), Gaussian vectorised by chunks.
"""

from __future__ import annotations

import numpy as np

from .kernels import subsampled_roots
from .numerical import Equations, map_points, solve_bracketed
from .params import SOLVER_BOUNDS, Params
from .state import TANH_MULTIPLIER
from .terms import gaussian_ratios

PROBE_STRIDE = 8
"""One equation in this many is solved from the player's mu; the rest start from its roots."""
CHUNK_ELEMENTS = 1 << 19
"""Max (players x window) elements evaluated at once (~a dozen such arrays per chunk)."""


def bucket(x: np.ndarray, width: float) -> np.ndarray:
    """round(x / width) with halves away from zero (Rust ``f64::round``)."""
    q = np.asarray(x, dtype=float) / width
    return (np.sign(q) * np.floor(np.abs(q) + 0.5)).astype(np.int64)


def window_bounds(term_mu_bucket: np.ndarray, player_mu_bucket: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """[beg, end) of each player's window over the merged terms (the reference's ``subsample``)."""
    n_terms = term_mu_bucket.shape[0]
    beg = np.searchsorted(term_mu_bucket, player_mu_bucket, side="left")
    end = beg + 1
    expand = (np.maximum(size - (end - beg), 0) + 1) // 2
    beg = np.maximum(beg - expand, 0)
    end = np.minimum(end + expand, n_terms)
    expand = np.maximum(size - (end - beg), 0)
    beg = np.maximum(beg - expand, 0)
    end = np.minimum(end + expand, n_terms)
    return beg, end


def _solve_with_probes(f: Equations, start: np.ndarray, window: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Roots of a chunk's equations (players by (mu bucket = ``window``, rank)): the first, last and
    every ``PROBE_STRIDE``-th of a bucket from its mu, the others from the probes' roots
    interpolated by rank (same window, close ranks: close roots)."""
    k = start.shape[0]
    lo, hi = np.full(k, SOLVER_BOUNDS[0]), np.full(k, SOLVER_BOUNDS[1])
    first = np.flatnonzero(np.diff(window, prepend=window[0] - 1))
    position = np.arange(k) - np.repeat(first, np.diff(np.append(first, k)))
    is_last = np.append(window[1:] != window[:-1], True)
    is_probe = (position % PROBE_STRIDE == 0) | is_last
    probe, rest = np.flatnonzero(is_probe), np.flatnonzero(~is_probe)
    roots = np.empty(k)
    roots[probe] = solve_bracketed(
        lambda x, i: f(x, probe[i]), lo[probe], hi[probe], start[probe], increasing=False
    )
    if rest.shape[0]:
        # (bucket, rank) as one increasing key; never across a bucket: its ends are probes
        key = (window - window[0]) * float(rank.max() + 1) + rank
        guess = np.interp(key[rest], key[probe], roots[probe])
        roots[rest] = solve_bracketed(
            lambda x, i: f(x, rest[i]), lo[rest], hi[rest], guess, increasing=False
        )
    return roots


def subsampled_performance(mu: np.ndarray, delta: np.ndarray, ranks: np.ndarray, params: Params) -> np.ndarray:
    """Every player's performance against its subsampled, bucketed opponents (input order)."""
    assert params.subsample_size is not None
    width = params.subsample_bucket
    _, rank_pos = np.unique(ranks, return_inverse=True)  # dense 0-based rank positions
    rank_pos = rank_pos.astype(np.int64)
    bm, bd = bucket(mu, width), bucket(delta, width)
    order = np.lexsort((rank_pos, bd, bm))
    bm_s, bd_s = bm[order], bd[order]
    new_term = np.ones(order.shape[0], dtype=bool)
    new_term[1:] = (bm_s[1:] != bm_s[:-1]) | (bd_s[1:] != bd_s[:-1])
    term_start = np.flatnonzero(new_term)
    term_size = np.diff(np.append(term_start, order.shape[0]))
    term_id = np.cumsum(new_term) - 1
    term_mu = np.bincount(term_id, weights=mu[order]) / term_size
    term_delta = np.bincount(term_id, weights=delta[order]) / term_size
    beg, end = window_bounds(bm_s[term_start], bm, params.subsample_size)
    tie_mult = 1.0 if params.split_ties else 2.0
    # players in (mu bucket, rank) order: a bucket's players share one window
    by_window = np.lexsort((rank_pos, bm))
    if params.variant == "logistic":  # compiled, one player at a time on the calling thread
        roots: np.ndarray = subsampled_roots(mu, rank_pos, bm, by_window, beg, end, term_mu,
                                             TANH_MULTIPLIER / term_delta, term_size,
                                             np.append(term_start, order.shape[0]), rank_pos[order], tie_mult)
        return roots

    n_ranks = int(rank_pos.max()) + 1
    keys = term_id * n_ranks + rank_pos[order]  # sorted: by term, then rank
    width_max = int((end - beg).max())
    first_rank = rank_pos[order][term_start]  # the rank of single-member terms
    step = max(1, CHUNK_ELEMENTS // width_max)
    # within each window column of the chunk the (term, rank) search keys come sorted (windows
    # advance monotonically with the mu bucket), which numpy's searchsorted exploits

    def solve_chunk(a: int) -> np.ndarray:
        rows = by_window[a : a + step]
        cols = beg[rows, None] + np.arange(width_max)
        valid = cols < end[rows, None]
        cols = np.where(valid, cols, 0)
        mine = rank_pos[rows, None]
        # members of each window term ranked better (less) / not worse (leq) than the player:
        # a comparison for single-member terms, a search of the (term, rank) keys otherwise
        ranks_of = first_rank[cols]
        less = (ranks_of < mine).astype(np.int64)
        leq = (ranks_of <= mine).astype(np.int64)
        multi = (valid & (term_size[cols] > 1)).T  # column by column: sorted runs of keys
        multi_cols = cols.T[multi]
        my_key = multi_cols * n_ranks + np.broadcast_to(mine.T, multi.shape)[multi]
        less.T[multi] = np.searchsorted(keys, my_key, side="left") - term_start[multi_cols]
        leq.T[multi] = np.searchsorted(keys, my_key, side="right") - term_start[multi_cols]
        less *= valid  # padding columns count nothing
        leq *= valid
        n_loss = less.astype(float)
        n_tie = (leq - less).astype(float)
        n_win = (term_size[cols] * valid - leq).astype(float)
        t_mu, t_delta = term_mu[cols], term_delta[cols]
        # Gaussian (Elo-MMchi); the logistic variant took the compiled path above
        # in z = (x - mu)/delta units (module terms): win = r_win/delta, loss = r_loss/delta,
        # r' = -z r - r^2; tie = -z/delta (or the mean of win and loss with split ties)
        inv_delta = 1.0 / t_delta
        if params.split_ties:
            w_win, w_loss, w_z = (n_win + 0.5 * n_tie) * inv_delta, (n_loss + 0.5 * n_tie) * inv_delta, None
        else:
            w_win, w_loss, w_z = n_win * inv_delta, n_loss * inv_delta, -n_tie * inv_delta
        tie_slope = None if w_z is None else (w_z * inv_delta).sum(axis=1)

        def f(x: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            inv = inv_delta[idx]
            z = np.subtract(x[:, None], t_mu[idx])
            z *= inv
            r_win, r_loss = gaussian_ratios(z)
            ww, wl = w_win[idx], w_loss[idx]
            value = ww * r_win
            value += wl * r_loss
            slope = ww * (-z * r_win - r_win * r_win) + wl * (-z * r_loss - r_loss * r_loss)
            slope *= inv
            if w_z is None:
                return value.sum(axis=1), slope.sum(axis=1)
            value += w_z[idx] * z
            assert tie_slope is not None  # set whenever w_z is
            return value.sum(axis=1), slope.sum(axis=1) + tie_slope[idx]

        return _solve_with_probes(f, mu[rows], bm[rows], rank_pos[rows])

    # chunks are independent: the same floats whatever the number of threads
    chunks = map_points(solve_chunk, range(0, mu.shape[0], step), parallel=mu.shape[0] > step)
    out = np.empty(mu.shape[0])
    out[by_window] = np.concatenate(chunks)
    return out
