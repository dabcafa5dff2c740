"""Phase two's chain rule: which (player, round) rows of a batch to apply, in which wave.

Per row, against the player's ``last_seq`` (docs/contracts.md, "Chains"): :data:`DONE` when
``last_seq >= seq`` (its stored result is re-emitted); a :data:`GAP` when the player's state
(stored, or moved by the batch's earlier rows) has not reached the row's ``previous_seq`` (never
applied on stale state); else :data:`APPLY`. Wave k holds every player's k-th row to apply (one
engine call per wave, each reading the posteriors the previous one left).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

APPLY = 0
DONE = 1
GAP = 2
NO_PREVIOUS = -1
"""``previous`` of a row whose entry has no ``previous_seq`` (a message without the field)."""


@dataclass(frozen=True)
class ChainPlan:
    """Per row: :data:`APPLY`, :data:`DONE` or :data:`GAP`, and the wave of an applied row."""

    status: np.ndarray
    wave: np.ndarray

    def waves(self) -> list[np.ndarray]:
        """The applied rows of each wave, in wave order (row indices ascending within a wave)."""
        rows = np.flatnonzero(self.status == APPLY)
        waves = self.wave[rows]
        if not waves.any():  # no player twice among the applied rows (a batch of small rounds, usually)
            return [rows] if len(rows) else []
        return [rows[waves == k] for k in np.unique(waves).tolist()]


def plan_chains(key: np.ndarray, seq: np.ndarray, previous: np.ndarray, last_seq: np.ndarray) -> ChainPlan:
    """The chain rule (module docstring) for rows of players ``key`` (indices into their stored
    ``last_seq``) in rounds ``seq`` with ``previous_seq`` ``previous``, at most one row per player
    and round; the k-th rows (by seq) of every player decided together, each player's cursor moved."""
    n = len(key)
    if not n or np.bincount(key).max() == 1:  # every player once (a batch of small rounds, usually): one wave
        reached = np.asarray(last_seq, dtype=np.int64)[key]
        done = reached >= seq
        apply = ~done & ((previous == NO_PREVIOUS) | (reached >= previous))
        status = np.where(done, DONE, np.where(apply, APPLY, GAP)).astype(np.int8)
        return ChainPlan(status, np.zeros(n, dtype=np.int64))
    order = np.lexsort((seq, key))
    sorted_key = key[order]
    first = np.ones(n, dtype=bool)
    first[1:] = sorted_key[1:] != sorted_key[:-1]
    occurrence = np.arange(n) - np.maximum.accumulate(np.where(first, np.arange(n), 0))
    status = np.full(n, GAP, dtype=np.int8)
    wave = np.zeros(n, dtype=np.int64)
    wave[order] = occurrence
    cursor = np.asarray(last_seq, dtype=np.int64).copy()
    for k in range(int(occurrence.max(initial=-1)) + 1):
        rows = order[occurrence == k]
        players, seqs, before = key[rows], seq[rows], previous[rows]
        reached = cursor[players]
        done = last_seq[players] >= seqs
        apply = ~done & (reached < seqs) & ((before == NO_PREVIOUS) | (reached >= before))
        status[rows[done]] = DONE
        status[rows[apply]] = APPLY
        cursor[players[apply]] = seqs[apply]
    return ChainPlan(status, wave)
