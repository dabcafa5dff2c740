"""Compiled copies of the rows of padded factor arrays (``PlayerBatch.p``/``w_arg``/``w_out``) that
touch only each row's ``n_factors`` used entries (a batch ~100 wide may use ~10-15 of them a row).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def copy_used(src: np.ndarray, src_rows: np.ndarray, n_factors: np.ndarray, dst: np.ndarray, dst_rows: np.ndarray,
              n_stale: np.ndarray) -> None:
    """For each q: the first ``n_factors[q]`` entries of row ``src_rows[q]`` of ``src`` into row
    ``dst_rows[q]`` of ``dst``, whose entries from there up to ``n_stale[q]`` are zeroed (what a
    shorter history leaves behind)."""
    for q in range(src_rows.shape[0]):
        i, j, k = src_rows[q], dst_rows[q], n_factors[q]
        for f in range(k):
            dst[j, f] = src[i, f]
        for f in range(k, n_stale[q]):
            dst[j, f] = 0.0


def gather_factors(arrays: tuple[np.ndarray, ...], rows: np.ndarray, n_factors: np.ndarray,
                   width: int) -> tuple[np.ndarray, ...]:
    """``tuple(a[rows, :width] for a in arrays)`` for rows whose entries past ``n_factors``
    (aligned with ``rows``) are zeros: new zeroed arrays, only the used entries copied."""
    n = rows.shape[0]
    out = tuple(np.zeros((n, width)) for _ in arrays)
    if n and width:
        k = np.asarray(n_factors, dtype=np.int64)
        src_rows, dst_rows = np.asarray(rows, dtype=np.int64), np.arange(n)
        for a, o in zip(arrays, out):
            copy_used(np.ascontiguousarray(a), src_rows, k, o, dst_rows, k)
    return out


def scatter_factors(arrays: tuple[np.ndarray, ...], rows: np.ndarray, n_old: np.ndarray,
                    sources: tuple[np.ndarray, ...], n_factors: np.ndarray) -> None:
    """Row q of each source (its first ``n_factors[q]`` entries) into row ``rows[q]`` of the
    matching array (C-contiguous, in place), zeroing what is left of its old ``n_old[q]``."""
    q = np.arange(rows.shape[0])
    k, old = np.asarray(n_factors, dtype=np.int64), np.asarray(n_old, dtype=np.int64)
    for a, s in zip(arrays, sources):
        copy_used(np.ascontiguousarray(s), q, k, a, np.asarray(rows, dtype=np.int64), old)
