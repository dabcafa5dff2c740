"""Hyper-parameters of Elo-MMR and the named presets, parametrised as the authors' ``elo_mmr.rs``: a
round of weight ``w = weight * weight_limit`` has noise ``beta`` and drift ``gamma`` such that
``sigma^2 = sig_limit^2`` is the fixed point of ``sigma^2 <- 1/(1/(sigma^2+gamma^2) + 1/beta^2)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from .season_schedule import Seasons

Variant = Literal["logistic", "gaussian"]

MU_NOOB = 1500.0
"""Mean rating of a newcomer (the authors' default)."""
SIG_NOOB = 350.0
"""Uncertainty of a newcomer (the authors' default)."""
SOLVER_BOUNDS = (-6000.0, 9000.0)
"""Bracket of every root solve (``numerical.rs``: ``bounds = (-6000.0, 9000.0)``)."""
EXACT_BUCKET = 1e-5
"""Bucket width of the authors' exact mode (only merges numerically identical opponents)."""


@dataclass(frozen=True, slots=True)
class Params:
    """One rating pool's maths. ``subsample_size=None``: exact phase one; ``history_limit=None``:
    unbounded; ``rho=math.inf``: Elo-MMR(inf) (memoryless, as Elo-MMchi). ``draws_rate``: a draw is
    rated by the tie terms (Theorem 3.2); False: the authors' "outcome free" skip (``mmr``'s parity)."""

    name: str = "mmr"
    variant: Variant = "logistic"
    rho: float = 1.0
    weight_limit: float = 0.2
    sig_limit: float = 80.0
    drift_per_day: float = 0.0
    split_ties: bool = False
    subsample_size: int | None = None
    subsample_bucket: float = EXACT_BUCKET
    history_limit: int | None = None
    mu_noob: float = MU_NOOB
    sig_noob: float = SIG_NOOB
    draws_rate: bool = True
    season: Seasons | None = field(default=None, repr=False)
    """The ladder's season schedule and soft reset (``stream.engine.seasons``; None: no seasons).
    Not in the repr: the parameters' digest is the rating maths between season starts."""

    def __post_init__(self) -> None:
        if self.variant not in ("logistic", "gaussian"):
            raise ValueError(f"unknown variant {self.variant!r}")
        if not (self.weight_limit > 0 and self.sig_limit > 0 and self.sig_noob > 0):
            raise ValueError("weight_limit, sig_limit and sig_noob must be positive")
        if not self.rho >= 0:
            raise ValueError("rho must be >= 0 (math.inf for Elo-MMR(inf))")
        if self.drift_per_day < 0:
            raise ValueError("drift_per_day must be >= 0")
        if self.subsample_size is not None and self.subsample_size < 1:
            raise ValueError("subsample_size must be >= 1 or None")
        if self.history_limit is not None and self.history_limit < 1:
            raise ValueError("history_limit must be >= 1 or None")

    @property
    def memoryless(self) -> bool:
        """True for Elo-MMchi and Elo-MMR(inf): the diffusion collapses the belief to a Gaussian."""
        return self.variant == "gaussian" or math.isinf(self.rho)

    def round_weight(self, weight: float = 1.0) -> float:
        """w = contest weight x weight_limit (the authors' ``compute_weight``; noob_delay is empty)."""
        return weight * self.weight_limit

    def beta(self, weight: float = 1.0) -> float:
        """Performance noise ``sig_perf = sqrt(L^2 (1 + 1/w) + drift_per_day / w)``."""
        return float(performance_noise(self, weight))

    def gamma(self, weight: float = 1.0, elapsed_days: float = 0.0) -> float:
        """Skill drift ``sig_drift = sqrt(w L^2 + drift_per_day * days)`` (Section 4, Eq. 9)."""
        w = self.round_weight(weight)
        return math.sqrt(w * self.sig_limit**2 + self.drift_per_day * elapsed_days)

    def with_(self, **changes: object) -> Params:
        """A copy with some fields changed."""
        return replace(self, **changes)  # type: ignore[arg-type]


def performance_noise(params: Params, weight: float | np.ndarray) -> np.ndarray:
    """:meth:`Params.beta` for one weight or an array of them (the same floats)."""
    w = params.round_weight(weight)  # type: ignore[arg-type]
    out: np.ndarray = np.sqrt((1.0 + 1.0 / w) * params.sig_limit**2 + params.drift_per_day / w)
    return out


DEFAULT_HISTORY_LIMIT = 30
"""Logistic factors kept per player by the default preset (older ones fold into the Gaussian)."""

PRESETS: dict[str, Params] = {
    # The authors' EloMMR::default(): exact, rho = 1; draws skipped as elo_mmr_py does (parity).
    "mmr": Params(name="mmr", draws_rate=False),
    # EloMMR::default_fast(): 100 opponent terms, bucket 2; history bounded by the same 100.
    "mmr-fast": Params(name="mmr-fast", subsample_size=100, subsample_bucket=2.0, history_limit=100),
    # The service's default: the authors' maths, exact, history bounded (BENCHMARKS.md).
    "mmr-bounded": Params(name="mmr-bounded", history_limit=DEFAULT_HISTORY_LIMIT),
    # EloMMR::default_gaussian() / default_gaussian_fast(): Elo-MMchi.
    "mmx": Params(name="mmx", variant="gaussian"),
    "mmx-fast": Params(
        name="mmx-fast", variant="gaussian", subsample_size=100, subsample_bucket=2.0, history_limit=100
    ),
    # Duels (issue 27): `stream tune --model mmr-bounded --budget 64 --seed 0` on bench/duel_history.py
    # --seed 100 (held-out pair accuracy 58.8 % vs 54.2 %; README "Configuration").
    "mmr-duel": Params(name="mmr-duel", weight_limit=0.0159, sig_limit=83.8, rho=5.0,
                       history_limit=DEFAULT_HISTORY_LIMIT),
    # The shipped Codeforces config `[0.23, 54.0, 0, 100.0, 2.0, 0.04]` (REFERENCE.md): params[3] = 100
    # is both the opponent subsample and the history bound.
    "paper-codeforces": Params(
        name="paper-codeforces",
        rho=0.04,
        weight_limit=0.23,
        sig_limit=54.0,
        subsample_size=100,
        subsample_bucket=2.0,
        history_limit=100,
    ),
}


DUEL_PRESET = "mmr-duel"
"""The preset for duel ladders (README "Configuration"); ``stream simulate``'s default."""

DEFAULT_PRESET = "mmr-bounded"
"""The service's preset when ``ENGINE_PRESET`` is not set (settings), and ``stream replay``'s."""


def preset(name: str) -> Params:
    """The named preset (KeyError lists the known names)."""
    try:
        return PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown preset {name!r}; known: {sorted(PRESETS)}") from None
