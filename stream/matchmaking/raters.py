"""Who rates the simulated matches (``stream simulate``): the engine, in process, by the calls
``stream replay`` makes (:func:`stream.batch.replay.rate_sequence` over RoundResults), or
openskill.py's Plackett-Luce (the baseline), its ratings mapped onto the Elo-MMR scale."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from stream.batch.replay import ReplayResult, rate_sequence
from stream.contracts import RoundResult
from stream.contracts.round import Standing
from stream.engine.ladders import LadderConfig
from stream.engine.predict import outcome_model

from .odds import ahead

Array = NDArray[np.float64]
EPOCH = 1_700_000_000.0
"""Simulated time 0 in epoch seconds (the rounds' occurred_at)."""


class Rater(Protocol):
    """Ratings on the ladder's (Elo-MMR) scale, predictions, and rating a tick's duels."""

    def ratings(self, players: Sequence[int]) -> tuple[Array, Array]: ...
    def predict(self, a: Sequence[int], b: Sequence[int]) -> Array: ...
    def rate(self, winners: Sequence[int], losers: Sequence[int], now: float) -> None: ...


class EngineRater:
    """The engine's ratings, rounds rated as ``stream replay`` rates them (ladder ``name``)."""

    def __init__(self, ladder: LadderConfig, names: list[str], tag: str, name: str = "sim") -> None:
        self.ladder, self.names, self.tag, self.name = ladder, names, tag, name
        self.result = ReplayResult(params=ladder.elo_mmr)
        self.model = outcome_model(ladder)
        self.count = 0
        noob = ladder.newcomer
        self.noob = (noob.mu_noob, noob.sig_noob)

    def ratings(self, players: Sequence[int]) -> tuple[Array, Array]:
        table = self.result.ladders.get(self.name)
        mu = np.full(len(players), self.noob[0])
        sigma = np.full(len(players), self.noob[1])
        if table is None or not len(players):
            return mu, sigma
        rows = table.lookup([self.names[i] for i in players])
        known = rows >= 0
        mu[known], sigma[known] = table.mu[rows[known]], table.sigma[rows[known]]
        return mu, sigma

    def predict(self, a: Sequence[int], b: Sequence[int]) -> Array:
        mu_a, sig_a = self.ratings(a)
        mu_b, sig_b = self.ratings(b)
        return ahead(mu_a, sig_a, mu_b, sig_b, self.model)

    def rounds(self, winners: Sequence[int], losers: Sequence[int], now: float) -> list[RoundResult]:
        """A tick's duels as the rounds that rate them (ids ``tag-1``, ``tag-2``, ... in play order)."""
        rounds = []
        for w, lo in zip(winners, losers):
            self.count += 1
            rounds.append(RoundResult(round_id=f"{self.tag}-{self.count}", ladder=self.name, occurred_at=EPOCH + now,
                                      standings=[Standing(self.names[w], 1), Standing(self.names[lo], 2)]))
        return rounds

    def rate(self, winners: Sequence[int], losers: Sequence[int], now: float) -> None:
        rate_sequence(self.result, self.rounds(winners, losers, now), keep_rounds=False)


class OpenSkillRater:
    """openskill.py's Plackett-Luce (defaults mu 25, sigma 25/3), shown on the Elo-MMR scale by
    ``1500 + (mu - 25) * 350 / (25 / 3)`` so one matchmaker configuration serves both."""

    def __init__(self, n: int, mu_noob: float = 1500.0, sig_noob: float = 350.0) -> None:
        from openskill.models import PlackettLuce

        self.model = PlackettLuce()
        self.players = [self.model.rating() for _ in range(n)]
        self.scale = sig_noob / self.model.sigma
        self.centre = mu_noob

    def ratings(self, players: Sequence[int]) -> tuple[Array, Array]:
        mu = np.array([self.players[i].mu for i in players], dtype=np.float64)
        sigma = np.array([self.players[i].sigma for i in players], dtype=np.float64)
        return self.centre + (mu - self.model.mu) * self.scale, sigma * self.scale

    def predict(self, a: Sequence[int], b: Sequence[int]) -> Array:
        return np.array([self.model.predict_win([[self.players[i]], [self.players[j]]])[0] for i, j in zip(a, b)])

    def rate(self, winners: Sequence[int], losers: Sequence[int], now: float) -> None:
        for w, lo in zip(winners, losers):
            (new_w,), (new_l,) = self.model.rate([[self.players[w]], [self.players[lo]]])
            self.players[w], self.players[lo] = new_w, new_l
