"""The rating-only models by name: each entry gives its default parameters, its round call and
where its maths comes from (the Elo-MMR presets are :data:`stream.engine.PRESETS`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from stream.engine import bar, codeforces, elo_multiplayer, glicko, topcoder, trueskill
from stream.engine.ratings import ModelParams, ModelRound, PairOdds, Ratings

@dataclass(frozen=True, slots=True)
class Model:
    """A model: defaults, round call, maths source, the elo_mmr_py system it reproduces, team call
    (None: individual full-time rounds only), whether it gives performances, and for ``predict``
    its pair odds, sampler and own match quality (None: the mean pairwise outcome entropy)."""

    name: str
    params: ModelParams
    rate: Callable[..., ModelRound]
    source: str
    oracle: str | None
    teams: Callable[..., ModelRound] | None = None
    """``rate_teams(before, entry, entry_ranks, weights, params)``: ``entry[i]`` player i's team."""
    performs: bool = False
    odds: Callable[..., PairOdds] | None = None
    sample: Callable[..., np.ndarray] | None = None
    quality: Callable[[np.ndarray, np.ndarray, Any], float] | None = None

    def rate_round(self, before: Ratings, ranks: np.ndarray, params: ModelParams | None = None, *,
                   weight: float = 1.0, perf_ceiling: float = math.inf) -> ModelRound:
        """One round with ``params`` (default: the model's defaults)."""
        chosen: Any = self.params if params is None else params
        return self.rate(before, ranks, chosen, weight=weight, perf_ceiling=perf_ceiling)

    def rate_teams(self, before: Ratings, entry: np.ndarray, entry_ranks: np.ndarray, weights: np.ndarray,
                   params: ModelParams | None = None) -> ModelRound:
        """One team round (see :attr:`teams`); ValueError if the model has no team call."""
        if self.teams is None:
            raise ValueError(f"model {self.name!r} does not rate team rounds")
        chosen: Any = self.params if params is None else params
        return self.teams(before, entry, entry_ranks, weights, chosen)


MODELS: dict[str, Model] = {
    "glicko": Model("glicko", glicko.GlickoParams(), glicko.rate_round, glicko.SOURCE, "glicko",
                    odds=glicko.pair_odds, sample=glicko.sample_performances),
    "codeforces": Model("codeforces", codeforces.CodeforcesParams(), codeforces.rate_round,
                        codeforces.SOURCE, "cfsys", performs=True,
                        odds=codeforces.pair_odds, sample=codeforces.sample_performances),
    "topcoder": Model("topcoder", topcoder.TopcoderParams(), topcoder.rate_round, topcoder.SOURCE, "tcsys",
                      performs=True, odds=topcoder.pair_odds, sample=topcoder.sample_performances),
    "bar": Model("bar", bar.BarParams(), bar.rate_round, bar.SOURCE, "bar",
                 odds=bar.pair_odds, sample=bar.sample_performances),
    "elo-multiplayer": Model("elo-multiplayer", elo_multiplayer.EloMultiplayerParams(),
                             elo_multiplayer.rate_round, elo_multiplayer.SOURCE, None,
                             odds=elo_multiplayer.pair_odds, sample=elo_multiplayer.sample_performances),
    "trueskill": Model("trueskill", trueskill.TrueSkillParams(), trueskill.rate_round, trueskill.SOURCE, None,
                       trueskill.rate_teams, odds=trueskill.pair_odds, sample=trueskill.sample_performances,
                       quality=trueskill.quality),
}


def model(name: str) -> Model:
    """The named model (KeyError lists the known names)."""
    try:
        return MODELS[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; known: {sorted(MODELS)}") from None
