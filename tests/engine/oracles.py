"""Test-only helpers over the engine's production functions (oracles and shorthands)."""

from __future__ import annotations

import math
import struct

import numpy as np
from numpy.typing import ArrayLike, NDArray

from stream.batch.replay import ReplayResult
from stream.engine import Params, PlayerState
from stream.engine.display import DEFAULT_LADDER_KEY, DisplayConfig
from stream.engine.predict import OutcomeModel, lobby_quality, pair_matrices
from stream.engine.state import PlayerBatch, factor_weight, unpack_batch


def pairwise_matrix(mu: ArrayLike, sigma: ArrayLike, model: OutcomeModel) -> NDArray[np.float64]:
    """``P[i, j]`` = P(i finishes ahead of j); the diagonal is 0."""
    return pair_matrices(mu, sigma, model)[0]


def expected_ranks(mu: ArrayLike, sigma: ArrayLike, model: OutcomeModel) -> NDArray[np.float64]:
    """Exact expected 1-based position: 1 + sum_j P(j ahead of i) + half of P(tie)."""
    ahead, tie = pair_matrices(mu, sigma, model)
    ranks: NDArray[np.float64] = 1.0 + ahead.sum(axis=0) + 0.5 * tie.sum(axis=0)
    return ranks


def match_quality(mu: ArrayLike, sigma: ArrayLike, model: OutcomeModel) -> float:
    """:func:`stream.engine.predict.lobby_quality` of a lobby (at least 2 players)."""
    ahead = pairwise_matrix(mu, sigma, model)
    if ahead.shape[0] < 2:
        raise ValueError("match quality needs at least 2 players")
    return lobby_quality(mu, sigma, model, ahead)


def config_for(ladder: str, configs: dict[str, DisplayConfig]) -> DisplayConfig:
    """The ladder's display config, else the ``"*"`` entry, else the defaults."""
    return configs.get(ladder) or configs.get(DEFAULT_LADDER_KEY) or DisplayConfig()


def state_from_bytes(data: bytes) -> PlayerState:
    """One packed state read back (:func:`stream.engine.state.unpack_batch`); ValueError if malformed."""
    return unpack_batch([data], Params()).to_states()[0]


def fold_oldest(batch: PlayerBatch, history_limit: int | None) -> PlayerBatch:
    """Fold the oldest logistic factor of every player whose history holds ``history_limit``
    factors into the Gaussian factor (in place; returns it): the numpy oracle of the history
    bound in ``kernels.update_row``."""
    if history_limit is None or batch.p.shape[1] == 0:
        return batch
    rows = np.flatnonzero(batch.n_factors >= history_limit)
    if rows.size == 0:
        return batch
    wn = batch.w0[rows]
    wl = factor_weight(batch.w_arg[rows, 0], batch.w_out[rows, 0])
    batch.mu0[rows] = (wn * batch.mu0[rows] + wl * batch.p[rows, 0]) / (wn + wl)
    batch.w0[rows] = wn + wl
    for arr in (batch.p, batch.w_arg, batch.w_out):
        arr[rows, :-1] = arr[rows, 1:]
        arr[rows, -1] = 0.0
    batch.n_factors[rows] -= 1
    return batch


def state_to_bytes(state: PlayerState) -> bytes:
    """One state packed by ``struct`` (the oracle of :func:`stream.engine.state.pack_batch`)."""
    last = math.nan if state.last_time is None else float(state.last_time)
    head = struct.pack("<BddddIdI", 1, state.mu, state.sigma, state.mu0, state.w0, state.rounds, last,
                       len(state.factors))
    return head + np.asarray(state.factors, dtype="<f8").reshape(-1, 3).tobytes()


def final_state(result: ReplayResult, ladder: str, player: str) -> PlayerState:
    """One player's final state in a replay (KeyError if he never played in that ladder)."""
    table = result.ladders[ladder]
    return table.gather(np.array([table.index[player]])).to_states()[0]
