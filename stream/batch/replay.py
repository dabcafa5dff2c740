"""Batch replay: rate a sequence of rounds in process.  THE reference the streaming pipeline must
equal (DESIGN.md, "The guarantee that matters most").

Rounds of each ladder are rated in input order with :func:`stream.engine.rate_round`, one
vectorised call per round; ladders are independent pools.  Outcome-free rounds (fewer than two
players, everyone tied) rate nobody and are recorded in ``ReplayResult.skipped``.  Rounds with
teams or partial play are rated by :func:`stream.engine.teams.rate_team_round` (Elo-MMR for teams).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from stream.batch.metrics import Metrics
from stream.batch.table import LadderTable
from stream.contracts import RoundResult
from stream.engine import OutcomeFree, Params, PlayerState, rate_round
from stream.engine.teams import rate_team_round


@dataclass(slots=True)
class RatedRound:
    """What one rated round produced: its players, ranks and phase-one performances (aligned)."""

    ladder: str
    round_id: str
    players: list[str]
    ranks: np.ndarray
    performance: np.ndarray


@dataclass
class ReplayResult:
    """Final states per (ladder, player), the rated rounds in order, the skipped ones."""

    params: Params
    ladders: dict[str, LadderTable] = field(default_factory=dict)
    rounds: list[RatedRound] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    metrics: Metrics | None = None

    def state(self, ladder: str, player: str) -> PlayerState:
        """One player's final state (KeyError if the player never played in that ladder)."""
        return self.ladders[ladder].state(player)

    def states(self) -> dict[tuple[str, str], PlayerState]:
        """Every final state, keyed by (ladder, player)."""
        out: dict[tuple[str, str], PlayerState] = {}
        for name, table in self.ladders.items():
            rows = np.arange(table.size)
            out.update(zip(((name, p) for p in table.names), table.gather(rows).to_states()))
        return out

    def ratings(self) -> Iterator[tuple[str, str, float, float, int]]:
        """(ladder, player, mu, sigma, rounds) for every player, ladders in first-seen order."""
        for name, table in self.ladders.items():
            n = table.size
            yield from zip([name] * n, table.names, table.mu[:n].tolist(), table.sigma[:n].tolist(),
                           table.rounds[:n].tolist())

    @property
    def participations(self) -> int:
        return sum(len(r.players) for r in self.rounds)


def replay(
    rounds: Iterable[RoundResult],
    params: Params,
    *,
    metrics: Metrics | None = None,
    keep_rounds: bool = True,
    on_round: Callable[[RoundResult], None] | None = None,
) -> ReplayResult:
    """Rate ``rounds`` in order; see the module docstring.

    ``metrics``: if given, every round is scored before its update (see
    :mod:`stream.batch.metrics`; round indices count every input round, skipped ones too).
    ``keep_rounds=False`` drops per-round performances (saves memory on big replays).
    ``on_round`` is called after each round (progress bars).
    """
    result = ReplayResult(params=params, metrics=metrics)
    for index, rnd in enumerate(rounds):
        _rate_one(result, index, rnd, keep_rounds)
        if on_round is not None:
            on_round(rnd)
    return result


def _rate_one(result: ReplayResult, index: int, rnd: RoundResult, keep_rounds: bool) -> None:
    if rnd.is_outcome_free():
        result.skipped.append((rnd.ladder, rnd.round_id))
        return
    table = result.ladders.get(rnd.ladder)
    if table is None:
        table = result.ladders[rnd.ladder] = LadderTable(result.params)
    players = rnd.players()
    ranks = rnd.ranks()
    if result.metrics is not None:
        known = table.lookup(players)
        seen = known >= 0
        earlier = np.where(seen, table.rounds[np.where(seen, known, 0)], 0)
        mu = np.where(seen, table.mu[np.where(seen, known, 0)], 0.0)
        result.metrics.observe(index, mu, ranks, earlier)
    rows = table.rows(players)
    try:
        if rnd.has_teams() or rnd.is_partial():
            entry, entry_ranks = rnd.entries()
            update = rate_team_round(table.gather(rows), entry, entry_ranks, rnd.player_weights(), result.params,
                                     weight=rnd.weight, perf_ceiling=rnd.perf_ceiling, time=rnd.occurred_at)
        else:
            update = rate_round(table.gather(rows), ranks, result.params, weight=rnd.weight,
                                perf_ceiling=rnd.perf_ceiling, time=rnd.occurred_at)
    except OutcomeFree:  # unreachable after is_outcome_free(); kept for engine-side definitions
        result.skipped.append((rnd.ladder, rnd.round_id))
        return
    table.scatter(rows, update.after)
    if keep_rounds:
        result.rounds.append(RatedRound(rnd.ladder, rnd.round_id, players, ranks, update.performance))
