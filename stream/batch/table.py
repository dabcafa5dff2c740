"""``LadderTable``: every player of one ladder as growable arrays, gathered into a
:class:`~stream.engine.PlayerBatch` per engine call and scattered back (no per-player Python maths).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import repeat

import numpy as np

from stream.engine import Params, PlayerBatch, PlayerState
from stream.engine.factor_rows import gather_factors, scatter_factors

INITIAL_CAPACITY = 1024
"""Rows allocated for a new ladder; capacity doubles when full."""

_ROW_FIELDS = ("mu", "sigma", "mu0", "w0", "n_factors", "rounds", "last_time")
_FACTOR_FIELDS = ("p", "w_arg", "w_out")


@dataclass
class LadderTable:
    """Players of one ladder: ``index`` maps player id → row; rows ``[0, size)`` are in use."""

    params: Params
    index: dict[str, int] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)
    mu: np.ndarray = field(init=False)
    sigma: np.ndarray = field(init=False)
    mu0: np.ndarray = field(init=False)
    w0: np.ndarray = field(init=False)
    n_factors: np.ndarray = field(init=False)
    rounds: np.ndarray = field(init=False)
    last_time: np.ndarray = field(init=False)
    p: np.ndarray = field(init=False)
    w_arg: np.ndarray = field(init=False)
    w_out: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        cap = INITIAL_CAPACITY
        self.mu, self.sigma, self.mu0, self.w0 = (np.empty(cap) for _ in range(4))
        self.n_factors, self.rounds = np.zeros(cap, dtype=np.int64), np.zeros(cap, dtype=np.int64)
        self.last_time = np.full(cap, np.nan)
        self.p, self.w_arg, self.w_out = (np.zeros((cap, 0)) for _ in range(3))

    @property
    def size(self) -> int:
        return len(self.names)

    def lookup(self, players: list[str]) -> np.ndarray:
        """Rows of ``players`` (-1 for players not seen yet), without adding anyone."""
        return np.array(list(map(self.index.get, players, repeat(-1))), dtype=np.int64).reshape(len(players))

    def rows(self, players: list[str]) -> np.ndarray:
        """Rows of ``players`` (repeats allowed), adding newcomers (:meth:`PlayerState.new`) in order."""
        rows = self.lookup(players)
        if rows.min(initial=0) >= 0:  # no newcomer: most rounds of a long history
            return rows
        new = np.flatnonzero(rows < 0)
        new_names = list(dict.fromkeys(map(players.__getitem__, new.tolist())))
        start = self.size
        stop = start + len(new_names)
        self._reserve(stop)
        self.index.update(zip(new_names, range(start, stop)))
        get = self.index.__getitem__
        rows[new] = list(map(get, map(players.__getitem__, new.tolist())))
        self.names.extend(new_names)
        prior = PlayerState.new(self.params)
        for name in ("mu", "sigma", "mu0", "w0"):
            getattr(self, name)[start:stop] = getattr(prior, name)
        return rows

    def gather(self, rows: np.ndarray) -> PlayerBatch:
        """The players at ``rows`` as a batch, factor arrays trimmed to their longest history."""
        n_factors = self.n_factors[rows]
        h = int(n_factors.max(initial=0))
        p, w_arg, w_out = gather_factors((self.p, self.w_arg, self.w_out), rows, n_factors, h)
        return PlayerBatch(
            mu=self.mu[rows], sigma=self.sigma[rows], mu0=self.mu0[rows], w0=self.w0[rows],
            p=p, w_arg=w_arg, w_out=w_out, n_factors=n_factors, rounds=self.rounds[rows], last_time=self.last_time[rows],
        )

    def scatter(self, rows: np.ndarray, batch: PlayerBatch) -> None:
        """Store ``batch`` (aligned with ``rows``) back into the table."""
        h = batch.p.shape[1]
        if h > self.p.shape[1]:
            self._widen(h)
        n_old = self.n_factors[rows]
        for name in _ROW_FIELDS:
            getattr(self, name)[rows] = getattr(batch, name)
        scatter_factors((self.p, self.w_arg, self.w_out), rows, n_old, (batch.p, batch.w_arg, batch.w_out),
                        batch.n_factors)

    def _reserve(self, n: int) -> None:
        cap = self.mu.shape[0]
        if n <= cap:
            return
        while cap < n:
            cap *= 2
        for name in (*_ROW_FIELDS, *_FACTOR_FIELDS):
            old = getattr(self, name)
            new = np.zeros((cap, *old.shape[1:]), dtype=old.dtype)
            if name == "last_time":
                new[:] = np.nan
            new[: old.shape[0]] = old
            setattr(self, name, new)

    def _widen(self, h: int) -> None:
        width = max(h, 2 * self.p.shape[1])
        for name in _FACTOR_FIELDS:
            old = getattr(self, name)
            new = np.zeros((old.shape[0], width))
            new[:, : old.shape[1]] = old
            setattr(self, name, new)
