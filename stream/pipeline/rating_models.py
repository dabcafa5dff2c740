"""Ladders rated by a rating-only model (``LADDERS``: glicko, codeforces, topcoder, bar,
elo-multiplayer, trueskill) through the same pipeline as Elo-MMR ladders.

Such a model maps the priors to the new ratings in one step (:mod:`stream.engine.models`), so
phase one rates the round completely and every fan-out entry carries the new rating
(``mu_after``, ``sigma_after``) beside the performance (the new mu when the model has none);
phase two stores the carried rating without an engine call (:func:`apply`). A model with a team
call (TrueSkill) rates team rounds and partial play too (``batch.models.support``). The packed ``state``
keeps the engine's layout without a logistic factor; ``stream replay --ladders`` and ``stream
backfill`` apply the same calls, so Redis equals them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from stream.batch.models import rate_one
from stream.contracts import RoundResult
from stream.engine.ladders import LadderConfig
from stream.engine.ratings import Ratings
from stream.engine.state import PlayerBatch, unpack_batch


@dataclass(frozen=True)
class ModelRated:
    """A ladder's rounds of a batch rated by its model: one row per (round, player), in order."""

    performance: np.ndarray
    """The model's performance, or the new mu where it has none (RatingChange then says null)."""
    mu: np.ndarray
    sigma: np.ndarray
    previous: np.ndarray
    """Row of the player's previous round in these rows (-1: his prior is the stored state)."""
    offsets: np.ndarray
    """Row offset of each round (and the total at the end)."""


def rate_rounds(cfg: LadderConfig, states: Sequence[bytes | None], members: Sequence[np.ndarray],
                rounds: Sequence[RoundResult]) -> ModelRated:
    """Rate ``rounds`` in order with the ladder's model from the players' packed ``states``
    (``members[k]``: rows into ``states`` of round k's players, in its standings' order)."""
    model = cfg.rating_model
    if model is None:
        raise TypeError(f"ladder model {cfg.model!r} is an Elo-MMR preset, not a rating-only model")
    current = unpack_batch(list(states), cfg.newcomer)
    mu, sigma, played = current.mu.copy(), current.sigma.copy(), current.rounds.copy()
    last_row = np.full(len(states), -1, dtype=np.int64)
    sizes = [len(rows) for rows in members]
    offsets = np.cumsum([0, *sizes])
    total = int(offsets[-1])
    performance, new_mu, new_sigma = np.empty(total), np.empty(total), np.empty(total)
    previous = np.empty(total, dtype=np.int64)
    for k, (rows, round_) in enumerate(zip(members, rounds)):
        lo, hi = int(offsets[k]), int(offsets[k + 1])
        update = rate_one(model, cfg.model_params, Ratings(mu[rows], sigma[rows], played[rows]), round_)
        after = update.after
        mu[rows], sigma[rows], played[rows] = after.mu, after.sigma, after.rounds
        new_mu[lo:hi], new_sigma[lo:hi] = after.mu, after.sigma
        performance[lo:hi] = after.mu if update.performance is None else update.performance
        previous[lo:hi] = last_row[rows]
        last_row[rows] = np.arange(lo, hi)
    return ModelRated(performance, new_mu, new_sigma, previous, offsets)


def apply(before: PlayerBatch, mu: np.ndarray, sigma: np.ndarray, time: np.ndarray) -> PlayerBatch:
    """Phase two of rows of a rating-only ladder: the state holding the rating phase one carried."""
    n = len(before)
    return PlayerBatch(mu=mu.copy(), sigma=sigma.copy(), mu0=mu.copy(), w0=sigma**-2.0,
                       p=np.zeros((n, 0)), w_arg=np.zeros((n, 0)), w_out=np.zeros((n, 0)),
                       n_factors=np.zeros(n, dtype=np.int64), rounds=before.rounds + 1,
                       last_time=np.asarray(time, dtype=float).copy())
