"""Batch replay: rate a sequence of rounds in process, THE reference the streaming pipeline must
equal (DESIGN.md, "The guarantee that matters most"). Each ladder's rounds in input order, many per
engine call (:func:`stream.engine.teams.rate_rounds_with_teams`, teams and partial play included);
outcome-free rounds rate nobody and are recorded in ``ReplayResult.skipped``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from stream.batch.metrics import Metrics
from stream.batch.table import LadderTable
from stream.contracts import RoundResult
from stream.engine import Params, PlayerBatch, PlayerState, RoundSpec, RoundsUpdate
from stream.engine.teams import TeamRoundSpec, rate_rounds_with_teams


@dataclass(slots=True)
class RatedRound:
    """What one rated round produced: its players, ranks and phase-one performances (aligned)."""

    ladder: str
    round_id: str
    players: list[str]
    ranks: np.ndarray
    performance: np.ndarray


class Rated:
    """A replay's final ratings, from its ``ladders`` (Elo-MMR's and the rating-only models' replays)."""

    ladders: dict[str, LadderTable]

    def ratings(self) -> Iterator[tuple[str, str, float, float, int]]:
        """(ladder, player, mu, sigma, rounds) for every player, ladders in first-seen order."""
        for name, table in self.ladders.items():
            n = table.size
            yield from zip([name] * n, table.names, table.mu[:n].tolist(), table.sigma[:n].tolist(),
                           table.rounds[:n].tolist())


@dataclass
class ReplayResult(Rated):
    """Final states per (ladder, player), the rated rounds in order, the skipped ones."""

    params: Params
    ladders: dict[str, LadderTable] = field(default_factory=dict)
    rounds: list[RatedRound] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    metrics: Metrics | None = None
    seen: int = 0
    """Input rounds handled so far, skipped ones included (the next round's metrics index)."""

    def states(self) -> dict[tuple[str, str], PlayerState]:
        """Every final state, keyed by (ladder, player)."""
        out: dict[tuple[str, str], PlayerState] = {}
        for name, table in self.ladders.items():
            rows = np.arange(table.size)
            out.update(zip(((name, p) for p in table.names), table.gather(rows).to_states()))
        return out



CHUNK_ROUNDS = 8192
"""Rounds handed to the engine per call at most (its waves grow with the chunk)."""
CHUNK_PARTICIPATIONS = 1 << 17
"""Participations per engine call at most (bounds the chunk's gathered states)."""


def replay(
    rounds: Iterable[RoundResult],
    params: Params,
    *,
    metrics: Metrics | None = None,
    keep_rounds: bool = True,
    on_round: Callable[[RoundResult], None] | None = None,
) -> ReplayResult:
    """Rate ``rounds`` in order, scoring each before its update into ``metrics`` if given (indices count
    skipped rounds); ``keep_rounds=False`` drops the performances; ``on_round`` after each engine call."""
    result = ReplayResult(params=params, metrics=metrics)
    rate_sequence(result, rounds, keep_rounds=keep_rounds, on_round=on_round)
    return result


def rate_sequence(
    result: ReplayResult,
    rounds: Iterable[RoundResult],
    *,
    keep_rounds: bool = True,
    on_round: Callable[[RoundResult], None] | None = None,
) -> None:
    """:func:`replay`'s loop into ``result``, one engine call per ladder and chunk of rounds."""
    chunk: list[RoundResult] = []
    size = 0
    for rnd in rounds:
        chunk.append(rnd)
        size += rnd.field_size
        if len(chunk) >= CHUNK_ROUNDS or size >= CHUNK_PARTICIPATIONS:
            _rate_chunk(result, chunk, keep_rounds, on_round)
            chunk, size = [], 0
    if chunk:
        _rate_chunk(result, chunk, keep_rounds, on_round)


def _rate_chunk(result: ReplayResult, chunk: list[RoundResult], keep_rounds: bool,
                on_round: Callable[[RoundResult], None] | None) -> None:
    """Rate consecutive rounds, one engine call per ladder, recording them in input order."""
    first = result.seen
    result.seen += len(chunk)
    free = [rnd.is_outcome_free(result.params.draws_rate) for rnd in chunk]
    by_ladder: dict[str, list[int]] = {}
    for i, rnd in enumerate(chunk):
        if not free[i]:
            by_ladder.setdefault(rnd.ladder, []).append(i)
    observed: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = []
    rated: dict[int, RatedRound] = {}
    for ladder, members in by_ladder.items():
        table = result.ladders.get(ladder)
        if table is None:
            table = result.ladders[ladder] = LadderTable(result.params)
        standings = [chunk[i].standings for i in members]
        bounds = np.zeros(len(members) + 1, dtype=np.int64)
        np.cumsum([len(st) for st in standings], out=bounds[1:])
        players = [s.player for st in standings for s in st]
        ranks = np.fromiter((s.rank for st in standings for s in st), dtype=np.int64, count=len(players))
        touched, local = np.unique(table.rows(players), return_inverse=True)
        cuts = bounds.tolist()
        specs = [round_spec(chunk[i], local[a:b], ranks[a:b]) for i, a, b in zip(members, cuts[:-1], cuts[1:])]
        prior = table.gather(touched)
        update = rate_rounds_with_teams(prior, specs, result.params)
        table.scatter(touched, update.after)
        if result.metrics is not None:
            mu_before, earlier = before_rounds(prior, local, update)
            observed += [(first + i, mu_before[a:b], ranks[a:b], earlier[a:b])
                         for i, a, b in zip(members, cuts[:-1], cuts[1:])]
        if keep_rounds:
            for i, a, b in zip(members, cuts[:-1], cuts[1:]):
                rated[i] = RatedRound(ladder, chunk[i].round_id, players[a:b], ranks[a:b], update.performance[a:b])
    if result.metrics is not None:
        result.metrics.observe_many(sorted(observed, key=lambda o: o[0]))
    for i, rnd in enumerate(chunk):
        if free[i]:
            result.skipped.append((rnd.ladder, rnd.round_id))
        elif i in rated:
            result.rounds.append(rated[i])
        if on_round is not None:
            on_round(rnd)


def round_spec(rnd: RoundResult, rows: np.ndarray, ranks: np.ndarray | None = None) -> RoundSpec | TeamRoundSpec:
    """The engine's spec of a round, its players at ``rows`` of the prior batch (``ranks``: its
    ranks, if the caller has them): a :class:`TeamRoundSpec` for teams or partial play."""
    ranks = rnd.ranks() if ranks is None else ranks
    if not (rnd.has_teams() or rnd.is_partial()):
        return RoundSpec(rows, ranks, time=rnd.occurred_at, weight=rnd.weight, perf_ceiling=rnd.perf_ceiling)
    entry, entry_ranks = rnd.entries()
    return TeamRoundSpec(rows, ranks, entry, entry_ranks, rnd.player_weights(), rnd.occurred_at, rnd.weight,
                         rnd.perf_ceiling)


def before_rounds(prior: PlayerBatch, local: np.ndarray, update: RoundsUpdate) -> tuple[np.ndarray, np.ndarray]:
    """Each participation's mu and rated rounds just before its round (metrics, rating health)."""
    prev = update.previous
    mu = np.where(prev >= 0, update.mu[np.maximum(prev, 0)], prior.mu[local])
    return mu, prior.rounds[local] + occurrence(local)


def occurrence(local: np.ndarray) -> np.ndarray:
    """For each participation (``local``: its player), how many earlier ones of the same player there are."""
    by_player = np.argsort(local, kind="stable")  # participations of a player in round order
    first = np.ones(local.shape[0], dtype=bool)
    first[1:] = local[by_player[1:]] != local[by_player[:-1]]
    starts = np.flatnonzero(first)
    out = np.empty(local.shape[0], dtype=np.int64)
    out[by_player] = np.arange(local.shape[0]) - np.repeat(starts, np.diff(np.append(starts, local.shape[0])))
    return out

