"""Batch replay of the rating-only models (:mod:`stream.engine.models`), with the rules of the
Elo-MMR replay (one engine call per round), and one entry point for every model name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from stream.batch.metrics import Metrics
from stream.batch.replay import Rated, replay
from stream.batch.table import LadderTable
from stream.contracts import RoundResult
from stream.contracts.round import INDIVIDUALS_ONLY, TEAMS, Support
from stream.engine import PRESETS, Params
from stream.engine.ladders import Ladders
from stream.engine.models import MODELS, Model
from stream.engine.ratings import ModelParams, ModelRound, Ratings


class Replayed(Protocol):
    """What every replay returns: final ratings and the skipped rounds."""

    skipped: list[tuple[str, str]]

    def ratings(self) -> Iterator[tuple[str, str, float, float, int]]: ...


def model_names() -> list[str]:
    """Every name ``--model`` accepts: the Elo-MMR presets, then the rating-only models."""
    return [*PRESETS, *MODELS]


def support(name: str) -> Support:
    """What the named model (``--model``, a ladder's) rates beyond individual full-time rounds: teams and
    partial play for an Elo-MMR preset (``engine.teams``) or a model with a team call."""
    model = MODELS.get(name)
    return TEAMS if name in PRESETS or (model is not None and model.teams is not None) else INDIVIDUALS_ONLY


@dataclass
class ModelReplay(Rated):
    """Final ratings per ladder of one model's replay, and the skipped rounds."""

    model: Model
    params: ModelParams
    ladders: dict[str, LadderTable] = field(default_factory=dict)
    """Per ladder its players (the table's mu, sigma and rounds columns: a rating-only model's state)."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    metrics: Metrics | None = None


def replay_model(
    rounds: Iterable[RoundResult],
    model: Model,
    params: ModelParams | None = None,
    *,
    metrics: Metrics | None = None,
    on_round: Callable[[RoundResult], None] | None = None,
) -> ModelReplay:
    """Rate ``rounds`` in order with a rating-only model (default parameters unless given)."""
    result = ModelReplay(model, model.params if params is None else params, metrics=metrics)
    for index, rnd in enumerate(rounds):
        _rate_one(result, index, rnd)
        if on_round is not None:
            on_round(rnd)
    return result


def _rate_one(result: ModelReplay, index: int, rnd: RoundResult) -> None:
    if rnd.is_outcome_free(result.params.draws_rate):
        result.skipped.append((rnd.ladder, rnd.round_id))
        return
    table = result.ladders.get(rnd.ladder)
    if table is None:
        newcomer = Params(name=result.model.name, mu_noob=result.params.mu_noob, sig_noob=result.params.sig_noob)
        table = result.ladders[rnd.ladder] = LadderTable(newcomer)
    players = rnd.players()
    if result.metrics is not None:
        result.metrics.observe_rows(index, table.lookup(players), table.mu, table.rounds, rnd.ranks())
    rows = table.rows(players)
    update = rate_one(result.model, result.params, Ratings(table.mu[rows], table.sigma[rows], table.rounds[rows]), rnd)
    table.mu[rows], table.sigma[rows], table.rounds[rows] = update.after.mu, update.after.sigma, update.after.rounds


def rate_one(model: Model, params: ModelParams, before: Ratings, rnd: RoundResult) -> ModelRound:
    """One round by a rating-only model from its players' priors ``before`` (standings order): the
    team call for teams and partial play where the model has one, else the round call."""
    if model.teams is not None and (rnd.has_teams() or rnd.is_partial()):
        entry, entry_ranks = rnd.entries()
        return model.teams(before, entry, entry_ranks, rnd.player_weights(), params)
    return model.rate_round(before, rnd.ranks(), params, weight=rnd.weight, perf_ceiling=rnd.perf_ceiling)


def replay_named(
    rounds: Sequence[RoundResult],
    name: str,
    *,
    overrides: Mapping[str, float] | None = None,
    metrics: Metrics | None = None,
    on_round: Callable[[RoundResult], None] | None = None,
) -> Replayed:
    """Replay with the named model's defaults, ``overrides`` replacing some (TypeError, ValueError)."""
    changes: dict[str, Any] = dict(overrides or {})
    if name in PRESETS:
        return replay(rounds, PRESETS[name].with_(**changes), metrics=metrics, keep_rounds=False,
                      on_round=on_round)
    if name in MODELS:
        model = MODELS[name]
        return replay_model(rounds, model, dataclasses.replace(model.params, **changes), metrics=metrics,
                            on_round=on_round)
    raise KeyError(f"unknown model {name!r}; known: {', '.join(model_names())}")


@dataclass
class LaddersReplay:
    """A replay under a ``LADDERS`` configuration: each ladder's own replay, in first-seen order."""

    parts: dict[str, Replayed] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)
    """Ladder -> the model that rated it."""

    skipped: list[tuple[str, str]] = field(default_factory=list)

    def ratings(self) -> Iterator[tuple[str, str, float, float, int]]:
        for part in self.parts.values():
            yield from part.ratings()


def replay_ladders(
    rounds: Sequence[RoundResult],
    ladders: Ladders,
    *,
    on_round: Callable[[RoundResult], None] | None = None,
) -> LaddersReplay:
    """Replay each ladder apart with the model and parameters ``ladders`` (``LADDERS``) gives it."""
    by_ladder: dict[str, list[RoundResult]] = {}
    for rnd in rounds:
        by_ladder.setdefault(rnd.ladder, []).append(rnd)
    result = LaddersReplay()
    for ladder, part in by_ladder.items():
        cfg = ladders.of(ladder)
        model = cfg.rating_model
        result.models[ladder] = cfg.model
        result.parts[ladder] = (replay(part, cfg.elo_mmr, keep_rounds=False, on_round=on_round) if model is None
                                else replay_model(part, model, cfg.model_params, on_round=on_round))
        result.skipped += result.parts[ladder].skipped
    return result
