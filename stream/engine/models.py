"""The rating-only models by name: each entry gives its default parameters, its round call and
where its maths comes from (the Elo-MMR presets are :data:`stream.engine.PRESETS`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from stream.engine import bar, codeforces, elo_multiplayer, glicko, topcoder
from stream.engine.ratings import ModelParams, ModelRound, Ratings

RateRound = Callable[..., ModelRound]


@dataclass(frozen=True, slots=True)
class Model:
    """A model: name, default parameters, round call, maths source, and the elo_mmr_py system it
    reproduces (None when the authors' code has no counterpart)."""

    name: str
    params: ModelParams
    rate: RateRound
    source: str
    oracle: str | None

    def rate_round(self, before: Ratings, ranks: np.ndarray, params: ModelParams | None = None, *,
                   weight: float = 1.0, perf_ceiling: float = math.inf) -> ModelRound:
        """One round with ``params`` (default: the model's defaults)."""
        chosen: Any = self.params if params is None else params
        return self.rate(before, ranks, chosen, weight=weight, perf_ceiling=perf_ceiling)


MODELS: dict[str, Model] = {
    "glicko": Model("glicko", glicko.GlickoParams(), glicko.rate_round, glicko.SOURCE, "glicko"),
    "codeforces": Model("codeforces", codeforces.CodeforcesParams(), codeforces.rate_round,
                        codeforces.SOURCE, "cfsys"),
    "topcoder": Model("topcoder", topcoder.TopcoderParams(), topcoder.rate_round, topcoder.SOURCE, "tcsys"),
    "bar": Model("bar", bar.BarParams(), bar.rate_round, bar.SOURCE, "bar"),
    "elo-multiplayer": Model("elo-multiplayer", elo_multiplayer.EloMultiplayerParams(),
                             elo_multiplayer.rate_round, elo_multiplayer.SOURCE, None),
}


def model(name: str) -> Model:
    """The named model (KeyError lists the known names)."""
    try:
        return MODELS[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; known: {sorted(MODELS)}") from None
