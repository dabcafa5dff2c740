"""The rating-only models by name: each entry gives its default parameters and its calls (the
Elo-MMR presets are :data:`stream.engine.PRESETS`)."""

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
    """A model (its maths: its module's docstring): defaults, round call, pair odds and sampler for
    ``predict``, the elo_mmr_py system it reproduces, whether it gives performances, team call (None:
    individual full-time rounds only) and own match quality (None: the mean pairwise outcome entropy)."""

    name: str
    params: ModelParams
    rate: Callable[..., ModelRound]
    odds: Callable[..., PairOdds]
    sample: Callable[..., np.ndarray]
    oracle: str | None = None
    performs: bool = False
    teams: Callable[..., ModelRound] | None = None
    """``rate_teams(before, entry, entry_ranks, weights, params)``: ``entry[i]`` player i's team."""
    quality: Callable[[np.ndarray, np.ndarray, Any], float] | None = None

    def rate_round(self, before: Ratings, ranks: np.ndarray, params: ModelParams | None = None, *,
                   weight: float = 1.0, perf_ceiling: float = math.inf) -> ModelRound:
        """One round with ``params`` (default: the model's defaults)."""
        chosen: Any = self.params if params is None else params
        return self.rate(before, ranks, chosen, weight=weight, perf_ceiling=perf_ceiling)


MODELS: dict[str, Model] = {m.name: m for m in (
    Model("glicko", glicko.GlickoParams(), glicko.rate_round, glicko.pair_odds, glicko.sample_performances, "glicko"),
    Model("codeforces", codeforces.CodeforcesParams(), codeforces.rate_round, codeforces.pair_odds,
          codeforces.sample_performances, "cfsys", performs=True),
    Model("topcoder", topcoder.TopcoderParams(), topcoder.rate_round, topcoder.pair_odds,
          topcoder.sample_performances, "tcsys", performs=True),
    Model("bar", bar.BarParams(), bar.rate_round, bar.pair_odds, bar.sample_performances, "bar"),
    Model("elo-multiplayer", elo_multiplayer.EloMultiplayerParams(), elo_multiplayer.rate_round,
          elo_multiplayer.pair_odds, elo_multiplayer.sample_performances),
    Model("trueskill", trueskill.TrueSkillParams(), trueskill.rate_round, trueskill.pair_odds,
          trueskill.sample_performances, teams=trueskill.rate_teams, quality=trueskill.quality),
)}
