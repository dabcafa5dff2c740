"""Player state: one player (:class:`PlayerState`) and a struct of arrays (:class:`PlayerBatch`).

The belief about a player's skill is the paper's Eq. (10): a Gaussian factor N(mu0, 1/w0) times
logistic factors, one per remembered round k, stored as the authors' ``TanhTerm``
``(p_k, w_arg_k, w_out_k)``: its contribution to L'(x) is ``w_out_k * tanh((x - p_k) * w_arg_k)``
and its weight (precision, Eq. 10's w_k) is ``2 w_arg_k w_out_k / TANH_MULTIPLIER^2``.
``mu``/``sigma`` are the published rating (the posterior's mode and the Eq. 8 uncertainty).

Packed form (:func:`pack_batch`, :func:`unpack_batch`), little-endian, 49 + 24 k bytes::

    u8  version (= 1)
    f64 mu, f64 sigma, f64 mu0, f64 w0
    u32 rounds
    f64 last_time      (epoch seconds; NaN = never played)
    u32 k              (number of logistic factors, oldest first)
    k x (f64 p, f64 w_arg, f64 w_out)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from .factor_rows import gather_factors
from .params import Params

TANH_MULTIPLIER = math.pi / math.sqrt(3.0)
"""pi/sqrt(3): a logistic of std-dev s has scale s*sqrt(3)/pi (``numerical.rs``)."""

PACK_VERSION = 1
_FACTOR_DTYPE = np.dtype("<f8")
_HEADER_DTYPE = np.dtype([("version", "u1"), ("mu", "<f8"), ("sigma", "<f8"), ("mu0", "<f8"), ("w0", "<f8"),
                          ("rounds", "<u4"), ("last_time", "<f8"), ("k", "<u4")])
"""The packed header as a numpy record (49 bytes, no padding): whole batches in one view."""
_FACTOR_BYTES = 3 * _FACTOR_DTYPE.itemsize
_HEADER_BYTES = _HEADER_DTYPE.itemsize

Factor = tuple[float, float, float]


def factor_weight(w_arg: np.ndarray | float, w_out: np.ndarray | float) -> np.ndarray | float:
    """Precision carried by a tanh factor (the authors' ``TanhTerm::get_weight``)."""
    return w_arg * w_out * 2.0 / TANH_MULTIPLIER**2


@dataclass(frozen=True, slots=True)
class PlayerState:
    """One player's full state in one ladder."""

    mu: float
    sigma: float
    mu0: float
    w0: float
    factors: tuple[Factor, ...] = ()
    rounds: int = 0
    last_time: float | None = None

    @classmethod
    def new(cls, params: Params) -> PlayerState:
        """A newcomer: N(mu_noob, sig_noob^2) prior, no factors, never played."""
        return cls(mu=params.mu_noob, sigma=params.sig_noob, mu0=params.mu_noob, w0=params.sig_noob**-2)


@dataclass(slots=True)
class PlayerBatch:
    """n players as arrays; factor arrays (n, H) left-aligned (oldest first), zero-padded."""

    mu: np.ndarray
    sigma: np.ndarray
    mu0: np.ndarray
    w0: np.ndarray
    p: np.ndarray
    w_arg: np.ndarray
    w_out: np.ndarray
    n_factors: np.ndarray
    rounds: np.ndarray
    last_time: np.ndarray = field(repr=False)

    def __len__(self) -> int:
        return int(self.mu.shape[0])

    @classmethod
    def new(cls, n: int, params: Params) -> PlayerBatch:
        """n newcomers."""
        return cls.from_states([PlayerState.new(params)] * n)

    @classmethod
    def from_states(cls, states: list[PlayerState]) -> PlayerBatch:
        """Pack a list of states (order preserved)."""
        n = len(states)
        h = max((len(s.factors) for s in states), default=0)
        fac = np.zeros((n, h, 3))
        n_factors = np.zeros(n, dtype=np.int64)
        for i, s in enumerate(states):
            k = len(s.factors)
            if k:
                fac[i, :k] = s.factors
            n_factors[i] = k
        mu, sigma, mu0, w0 = (np.array([getattr(s, name) for s in states], dtype=float)
                              for name in ("mu", "sigma", "mu0", "w0"))
        return cls(mu=mu, sigma=sigma, mu0=mu0, w0=w0, p=np.ascontiguousarray(fac[:, :, 0]),
                   w_arg=np.ascontiguousarray(fac[:, :, 1]), w_out=np.ascontiguousarray(fac[:, :, 2]),
                   n_factors=n_factors, rounds=np.array([s.rounds for s in states], dtype=np.int64),
                   last_time=np.array([math.nan if s.last_time is None else s.last_time for s in states], dtype=float))

    def to_states(self) -> list[PlayerState]:
        """Unpack into one :class:`PlayerState` per player (order preserved)."""
        out = []
        for i in range(len(self)):
            k = int(self.n_factors[i])
            factors = tuple(zip(self.p[i, :k].tolist(), self.w_arg[i, :k].tolist(), self.w_out[i, :k].tolist()))
            last = float(self.last_time[i])
            out.append(PlayerState(float(self.mu[i]), float(self.sigma[i]), float(self.mu0[i]), float(self.w0[i]),
                                   factors, int(self.rounds[i]), None if math.isnan(last) else last))
        return out

    def copy(self, width: int = 0) -> PlayerBatch:
        """A deep copy, factor arrays padded to at least ``width`` (only the used entries read)."""
        p, w_arg, w_out = gather_factors((self.p, self.w_arg, self.w_out), np.arange(len(self)), self.n_factors,
                                         max(width, self.p.shape[1]))
        return PlayerBatch(mu=self.mu.copy(), sigma=self.sigma.copy(), mu0=self.mu0.copy(), w0=self.w0.copy(), p=p,
                           w_arg=w_arg, w_out=w_out, n_factors=self.n_factors.copy(), rounds=self.rounds.copy(),
                           last_time=self.last_time.copy())

    def take(self, index: np.ndarray) -> PlayerBatch:
        """The sub-batch of the given rows."""
        return PlayerBatch(*(getattr(self, f)[index] for f in self.__slots__))

    def widen(self, h: int) -> None:
        """Pad the factor arrays with zero factors to width ``h`` (in place)."""
        for name in ("p", "w_arg", "w_out"):
            old = getattr(self, name)
            new = np.zeros((old.shape[0], h))
            new[:, : old.shape[1]] = old
            setattr(self, name, new)

    def put(self, index: np.ndarray, other: PlayerBatch) -> None:
        """Overwrite the given rows with ``other`` (aligned; in place), widening as needed."""
        h = other.p.shape[1]
        if h > self.p.shape[1]:
            self.widen(h)
        for name in ("mu", "sigma", "mu0", "w0", "n_factors", "rounds", "last_time"):
            getattr(self, name)[index] = getattr(other, name)
        for name in ("p", "w_arg", "w_out"):
            column = getattr(self, name)
            column[index, :h] = getattr(other, name)
            column[index, h:] = 0.0


@lru_cache(maxsize=64)
def _newcomer_blob(params: Params) -> bytes:
    """The packed state of a newcomer under ``params`` (:meth:`PlayerState.new`), built once."""
    return pack_batch(PlayerBatch.new(1, params))[0]


def unpack_batch(blobs: Sequence[bytes | None], params: Params) -> PlayerBatch:
    """The batch of packed states (the inverse of :func:`pack_batch`; ``None``: a
    newcomer); ValueError on a malformed or unknown-version blob. Vectorised: blobs zero-padded to
    the longest (zero bytes read as the batch's 0.0 padding), headers and factors views of one buffer."""
    n = len(blobs)
    newcomer = _newcomer_blob(params)
    joined = [newcomer if b is None else b for b in blobs]
    lengths = np.fromiter(map(len, joined), dtype=np.int64, count=n)
    if n and lengths.min() < _HEADER_BYTES:
        raise ValueError("packed player state too short")
    width = int(lengths.max(initial=_HEADER_BYTES))
    rows = np.frombuffer(b"".join([blob.ljust(width, b"\0") for blob in joined]), dtype=np.uint8).reshape(n, width)
    versions = rows[:, 0]
    if (versions != PACK_VERSION).any():
        raise ValueError(f"unknown packed state version {int(versions[versions != PACK_VERSION][0])}")
    head = np.ascontiguousarray(rows[:, :_HEADER_BYTES]).view(_HEADER_DTYPE).reshape(n)
    k = head["k"].astype(np.int64)
    if (lengths != _HEADER_BYTES + _FACTOR_BYTES * k).any():
        raise ValueError("packed player state has the wrong length")
    h = int(k.max(initial=0))
    fac = np.ascontiguousarray(rows[:, _HEADER_BYTES:_HEADER_BYTES + h * _FACTOR_BYTES]).view(_FACTOR_DTYPE)
    fac = fac.reshape(n, h, 3)
    return PlayerBatch(
        mu=head["mu"].astype(float), sigma=head["sigma"].astype(float), mu0=head["mu0"].astype(float),
        w0=head["w0"].astype(float),
        p=np.ascontiguousarray(fac[:, :, 0], dtype=float), w_arg=np.ascontiguousarray(fac[:, :, 1], dtype=float),
        w_out=np.ascontiguousarray(fac[:, :, 2], dtype=float),
        n_factors=k, rounds=head["rounds"].astype(np.int64), last_time=head["last_time"].astype(float),
    )


def pack_batch(batch: PlayerBatch) -> list[bytes]:
    """Each player's packed state (module docstring), cut from fixed-width records written at once."""
    n = len(batch)
    k = np.asarray(batch.n_factors, dtype=np.int64)
    h = batch.p.shape[1] if batch.p.ndim == 2 else 0
    rows = np.empty(n, dtype=np.dtype([("head", _HEADER_DTYPE), ("fac", _FACTOR_DTYPE, (h, 3))]))
    head = rows["head"]
    head["version"] = PACK_VERSION
    head["mu"], head["sigma"], head["mu0"], head["w0"] = batch.mu, batch.sigma, batch.mu0, batch.w0
    head["rounds"], head["k"] = batch.rounds, k
    head["last_time"] = np.where(np.isnan(batch.last_time), math.nan, batch.last_time)  # one NaN bit pattern
    fac = rows["fac"]
    fac[:, :, 0], fac[:, :, 1], fac[:, :, 2] = batch.p, batch.w_arg, batch.w_out
    flat = rows.tobytes()
    width = rows.dtype.itemsize
    starts = range(0, n * width, width)
    return [flat[a:a + length] for a, length in zip(starts, (_HEADER_BYTES + _FACTOR_BYTES * k).tolist())]
