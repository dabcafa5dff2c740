"""Team rounds and partial play in the pipeline: what the stream's model rates, and phase one's
engine call for a ladder's rounds (:func:`rate_ladder_rounds`) or one round
(:func:`round_performances`), teams included.

Elo-MMR for teams (``stream.engine.teams``, the maths in its docstring): each member is credited
his team's performance, and the fan-out carries his team and share of the match played
(PlayerUpdate v2 ``team``/``weight``: phase two's row weight is ``round weight x share``). A round
of individuals at full time keeps the individual path to the bit. :func:`support` says what a
ladder's model rates (else ``teams_unsupported``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from stream import engine
from stream.batch.replay import round_spec
from stream.contracts import RoundResult
from stream.engine.seasons import seasoned_view
from stream.engine.teams import member_performances, rate_rounds_with_teams


def is_team_round(round_: RoundResult) -> bool:
    """True when the round has teams or partial play (its fan-out entries carry ``team`` and ``weight``)."""
    return round_.has_teams() or round_.is_partial()


def rate_ladder_rounds(prior: engine.PlayerBatch, rounds: Sequence[RoundResult], members: Sequence[np.ndarray],
                       params: engine.Params, *, plain: bool) -> engine.RoundsUpdate:
    """Phase one's engine call for a ladder's rounds of a batch, in seq order (``members[k]``: round
    k's rows in ``prior``); ``plain``: no round has teams or partial play."""
    if plain:
        return rate_plain_rounds(prior, rounds, members, params)
    specs = [round_spec(round_, rows) for round_, rows in zip(rounds, members)]
    return rate_rounds_with_teams(prior, specs, params)


def rate_plain_rounds(prior: engine.PlayerBatch, rounds: Sequence[RoundResult], members: Sequence[np.ndarray],
                      params: engine.Params) -> engine.RoundsUpdate:
    """:func:`rate_ladder_rounds` of plain rounds: ``engine.rate_flat`` on arrays gathered in one pass
    (a duel's ``RoundSpec`` costs more than its solve)."""
    n = len(rounds)
    sizes = np.fromiter((round_.field_size for round_ in rounds), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    rows = np.concatenate(members).astype(np.int64) if n else np.zeros(0, dtype=np.int64)
    ranks = np.fromiter((s.rank for round_ in rounds for s in round_.standings), dtype=np.int64,
                        count=int(offsets[-1]))
    times = np.fromiter((round_.occurred_at for round_ in rounds), dtype=float, count=n)
    weights = np.fromiter((round_.weight for round_ in rounds), dtype=float, count=n)
    ceilings = np.fromiter((round_.perf_ceiling for round_ in rounds), dtype=float, count=n)
    return engine.rate_flat(prior, rows, ranks, offsets, times, weights, ceilings, params)


def round_performances(mu: np.ndarray, sigma: np.ndarray, last_time: np.ndarray, round_: RoundResult,
                       params: engine.Params) -> np.ndarray:
    """Phase one of one round from the players' stored ``mu``, ``sigma`` and ``last_time`` (standings
    order): a new season's soft reset, then ``engine.phase_one`` (members' performances for teams)."""
    days = engine.elapsed_days(last_time, round_.occurred_at)
    mu, sigma = seasoned_view(mu, sigma, last_time, round_.occurred_at, params)
    if not is_team_round(round_):
        return engine.phase_one(mu, sigma, days, round_.ranks(), params, weight=round_.weight,
                                perf_ceiling=round_.perf_ceiling)
    entry, entry_ranks = round_.entries()
    return member_performances(mu, sigma, days, entry, entry_ranks, round_.player_weights(), params,
                               weight=round_.weight, perf_ceiling=round_.perf_ceiling)


def fanout_columns(round_: RoundResult) -> tuple[list[str | None] | None, list[float] | None]:
    """Each player's team and share played as the fan-out writes them (None, None: a plain round)."""
    if not is_team_round(round_):
        return None, None
    return [s.team for s in round_.standings], [s.weight for s in round_.standings]
