"""Display ratings and tiers: what a player sees, derived from the hidden (mu, sigma).

Pure maths, vectorised over numpy arrays, no I/O. The pipeline calls :func:`display_rating`
and :func:`next_tier` after every rating update and stores the results (leaderboard score and
the player's ``tier``); the read API only reads them back.

Display modes (per ladder, :class:`DisplayConfig`):

* ``"mu"``: the posterior mean itself, as Codeforces-style systems show it.
* ``"conservative"``: ``mu - k*sigma``, a lower confidence bound (TrueSkill leaderboards,
  StarCraft II). A newcomer with one lucky round cannot top the board: sigma must shrink first.
  In Elo-MMR the new sigma after a round does not depend on the outcome (paper Eq. 8, the
  sigma update), so ``mu - k*sigma`` stays monotone in a player's rank (Theorem 5.5 still holds
  for the displayed number).
* ``"fixed-range"``: ``10000 / (1 + exp(-(mu - center) / scale))``, the Fermi/logistic map
  onto 0-10,000 of Kreimeier's "Rising from the Ranks" (average player 5,000; ``scale`` plays
  the article's ``display_scale`` ~ half the population's width).

Tiers (leagues) use hysteresis as in the StarCraft II ladder analysis: thresholds are on the
mu scale, sorted ascending, the lowest tier takes everyone.

* Promotion into tier t needs confidence: ``mu - k*sigma >= threshold[t]``.
* Demotion out of the current tier t needs confidence plus a margin:
  ``mu + k*sigma < threshold[t] - demotion_margin``.
* Otherwise the tier stays. An unplaced player (tier :data:`UNPLACED`) is placed at the highest
  tier its lower bound reaches. Several tiers can be crossed in one update.

Equivalently ``new = clip(current, lower, upper)`` with ``lower`` the highest tier with
``threshold <= mu - k*sigma`` and ``upper`` the highest tier with
``threshold - demotion_margin <= mu + k*sigma``; ``lower <= upper`` always holds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

DisplayMode = Literal["mu", "conservative", "fixed-range"]
DISPLAY_MODES: tuple[str, ...] = ("mu", "conservative", "fixed-range")

UNPLACED = -1
"""Tier index of a player who has no tier yet (stored as an empty ``tier`` field)."""

FIXED_RANGE_MAX = 10_000.0
"""Upper end of the fixed-range display scale (Kreimeier's ``max_rating``)."""

DEFAULT_MODE: DisplayMode = "conservative"
DEFAULT_K = 2.0
"""Two standard deviations: a ~97.7 % one-sided lower bound on skill."""
DEFAULT_CENTER = 1500.0
"""Fixed-range centre: the newcomers' prior mean (mu_noob) maps to 5,000."""
DEFAULT_SCALE = 200.0
"""Fixed-range scale: about half the width of a typical rated population (sd ~350-400)."""
DEFAULT_DEMOTION_MARGIN = 0.0
DEFAULT_TIERS: tuple[tuple[str, float], ...] = (
    ("Bronze", float("-inf")),
    ("Silver", 1300.0),
    ("Gold", 1500.0),
    ("Platinum", 1700.0),
    ("Diamond", 1900.0),
    ("Master", 2100.0),
    ("Grandmaster", 2400.0),
)
"""Thresholds on the mu scale of the default presets (newcomers start at mu 1500)."""

DEFAULT_LADDER_KEY = "*"
"""Key of the fallback entry in the ``DISPLAY_CONFIG`` mapping."""


@dataclass(frozen=True)
class DisplayConfig:
    """How one ladder shows ratings and tiers.

    ``tiers`` are ``(name, threshold)`` pairs on the mu scale, sorted by threshold; the first
    tier's threshold is ignored (it takes everyone). ``k`` is both the conservative-mode
    multiplier and the confidence needed to change tier.
    """

    mode: DisplayMode = DEFAULT_MODE
    k: float = DEFAULT_K
    center: float = DEFAULT_CENTER
    scale: float = DEFAULT_SCALE
    tiers: tuple[tuple[str, float], ...] = field(default=DEFAULT_TIERS)
    demotion_margin: float = DEFAULT_DEMOTION_MARGIN

    def __post_init__(self) -> None:
        if self.mode not in DISPLAY_MODES:
            raise ValueError(f"display mode must be one of {DISPLAY_MODES}, got {self.mode!r}")
        if not (self.k >= 0 and np.isfinite(self.k)):
            raise ValueError(f"k must be a finite number >= 0, got {self.k}")
        if not (self.scale > 0 and np.isfinite(self.scale)):
            raise ValueError(f"scale must be a finite number > 0, got {self.scale}")
        if not self.demotion_margin >= 0:
            raise ValueError(f"demotion_margin must be >= 0, got {self.demotion_margin}")
        tiers = tuple((str(name), float(threshold)) for name, threshold in self.tiers)
        if not tiers:
            raise ValueError("at least one tier is needed")
        thresholds = [t for _, t in tiers[1:]]
        if any(b <= a for a, b in zip(thresholds, thresholds[1:])):
            raise ValueError("tier thresholds must be strictly increasing")
        if len({name for name, _ in tiers}) != len(tiers):
            raise ValueError("tier names must be unique")
        object.__setattr__(self, "tiers", tiers)

    @property
    def tier_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.tiers)

    @property
    def thresholds(self) -> NDArray[np.float64]:
        """Tier thresholds with the lowest tier's replaced by -inf."""
        out = np.array([t for _, t in self.tiers], dtype=np.float64)
        out[0] = -np.inf
        return out

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> "DisplayConfig":
        """Build from the JSON form: ``{"mode", "k", "center", "scale", "tiers": [[name, t], ...],
        "demotion_margin"}``, every key optional. A null threshold means -inf."""
        known = {"mode", "k", "center", "scale", "tiers", "demotion_margin"}
        unknown = set(raw) - known
        if unknown:
            raise ValueError(f"unknown display config keys: {sorted(unknown)}")
        kwargs: dict[str, Any] = {k: raw[k] for k in known - {"tiers"} if k in raw}
        for key in ("k", "center", "scale", "demotion_margin"):
            if key in kwargs:
                kwargs[key] = float(kwargs[key])
        if "tiers" in raw:
            kwargs["tiers"] = tuple(
                (str(name), float("-inf") if threshold is None else float(threshold))
                for name, threshold in raw["tiers"]
            )
        return cls(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (the lowest threshold as null), inverse of :meth:`from_dict`."""
        tiers = [[name, None if i == 0 else threshold] for i, (name, threshold) in enumerate(self.tiers)]
        return {"mode": self.mode, "k": self.k, "center": self.center, "scale": self.scale,
                "tiers": tiers, "demotion_margin": self.demotion_margin}


def parse_display_configs(raw: str) -> dict[str, DisplayConfig]:
    """Parse the ``DISPLAY_CONFIG`` setting: a JSON object ladder -> config object.

    The entry ``"*"`` (if any) is the default for ladders not listed; an empty string means
    every ladder uses :class:`DisplayConfig`'s defaults.
    """
    if not raw.strip():
        return {}
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError("DISPLAY_CONFIG must be a JSON object mapping ladder -> config")
    return {str(ladder): DisplayConfig.from_dict(cfg) for ladder, cfg in data.items()}


def config_for(ladder: str, configs: Mapping[str, DisplayConfig]) -> DisplayConfig:
    """The ladder's config, else the ``"*"`` entry, else the defaults."""
    return configs.get(ladder) or configs.get(DEFAULT_LADDER_KEY) or DisplayConfig()


def display_rating(mu: ArrayLike, sigma: ArrayLike, cfg: DisplayConfig) -> NDArray[np.float64]:
    """The displayed rating for every (mu, sigma), per the config's mode (module docstring)."""
    mu_arr = np.asarray(mu, dtype=np.float64)
    sigma_arr = np.asarray(sigma, dtype=np.float64)
    if cfg.mode == "mu":
        return np.broadcast_arrays(mu_arr, sigma_arr)[0].copy()
    if cfg.mode == "conservative":
        return mu_arr - cfg.k * sigma_arr
    z = (mu_arr - cfg.center) / cfg.scale
    # 1/(1+exp(-z)) written with tanh: no overflow warnings for |z| large.
    out: NDArray[np.float64] = FIXED_RANGE_MAX * 0.5 * (1.0 + np.tanh(0.5 * z))
    return np.broadcast_arrays(out, sigma_arr)[0].copy()


def next_tier(current_tier: ArrayLike, mu: ArrayLike, sigma: ArrayLike,
              cfg: DisplayConfig) -> NDArray[np.int64]:
    """New tier indices after a rating change, with confidence and hysteresis (module docstring).

    ``current_tier`` holds indices into ``cfg.tiers`` or :data:`UNPLACED`; indices beyond the
    config (a shortened tier list) are treated as the top tier.
    """
    current = np.asarray(current_tier, dtype=np.int64)
    mu_arr = np.asarray(mu, dtype=np.float64)
    sigma_arr = np.asarray(sigma, dtype=np.float64)
    thresholds = cfg.thresholds
    top = len(thresholds) - 1
    lower = np.searchsorted(thresholds, mu_arr - cfg.k * sigma_arr, side="right") - 1
    upper = np.searchsorted(thresholds - cfg.demotion_margin, mu_arr + cfg.k * sigma_arr, side="right") - 1
    lower = np.clip(lower, 0, top)
    upper = np.clip(upper, 0, top)
    held = np.where(current == UNPLACED, lower, np.minimum(current, top))
    return np.clip(held, lower, upper).astype(np.int64)


def tier_names(indices: ArrayLike, cfg: DisplayConfig) -> list[str]:
    """Tier names for indices (``""`` for :data:`UNPLACED`), what the player hash stores."""
    names = cfg.tier_names
    return [names[i] if 0 <= i < len(names) else "" for i in np.asarray(indices, dtype=np.int64).tolist()]


def tier_indices(names: Sequence[str | bytes | None], cfg: DisplayConfig) -> NDArray[np.int64]:
    """Inverse of :func:`tier_names`: stored names back to indices; unknown or empty -> UNPLACED."""
    if len(names) == 0:
        return np.empty(0, dtype=np.int64)
    wanted = np.array([n.decode() if isinstance(n, bytes) else (n or "") for n in names], dtype=str)
    known = np.array(cfg.tier_names, dtype=str)
    order = np.argsort(known)
    pos = np.clip(np.searchsorted(known[order], wanted), 0, len(known) - 1)
    found = known[order][pos] == wanted
    return np.where(found, order[pos], UNPLACED).astype(np.int64)
