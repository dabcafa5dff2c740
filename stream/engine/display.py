"""Display ratings and tiers: what a player sees, derived from the hidden (mu, sigma); pure numpy.

Modes (per ladder, :class:`DisplayConfig`): ``"mu"``; ``"conservative"`` ``mu - k*sigma`` (monotone
in rank after a round: Eq. 8's sigma does not depend on the outcome, so Theorem 5.5 still holds);
``"fixed-range"`` ``10000 / (1 + exp(-(mu - center) / scale))`` (Kreimeier's Fermi map, 5,000 average).

Tiers with hysteresis (StarCraft II ladder): thresholds on the mu scale, the lowest tier takes
everyone; ``new = clip(current, lower, upper)`` with ``lower`` the highest tier with
``threshold <= mu - k*sigma`` (promotion needs confidence) and ``upper`` the highest with
``threshold - demotion_margin <= mu + k*sigma``; an unplaced player goes to ``lower``.
``divisions = D > 1`` splits every finite league band (not the lowest, not the top) into D equal
steps ``"<league> D"`` .. ``"<league> 1"`` (seed 003); the rule runs on the steps, and since a
step's league is monotone in the step, divisions never change league placement.
"""

from __future__ import annotations

import functools
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

MAX_DIVISIONS = 10
"""Most divisions per league a config may ask for."""

DEFAULT_LADDER_KEY = "*"
"""Key of the fallback entry in the ``DISPLAY_CONFIG`` mapping."""


STATUS_KEYS = ("interval_z", "provisional_sigma", "provisional_rounds", "min_rounds", "active_days", "max_sigma")
"""Display-entry keys of a rating's status: its interval, provisional status and leaderboard eligibility."""


@dataclass(frozen=True, slots=True)
class Placement:
    """A placement step: label, promotion threshold, league (index), division (1: top; None: undivided)."""

    label: str
    threshold: float
    league: int
    division: int | None


@dataclass(frozen=True)
class DisplayConfig:
    """How one ladder shows ratings and tiers. ``tiers`` are the leagues, ``(name, threshold)``
    sorted by threshold (the first one's is ignored); the placement steps that ``next_tier``
    indexes are :attr:`placements`."""

    mode: DisplayMode = "conservative"
    k: float = 2.0
    """The conservative multiplier and the confidence needed to change tier (~97.7 % one-sided)."""
    center: float = 1500.0
    """Fixed-range centre: the newcomers' prior mean maps to 5,000."""
    scale: float = 200.0
    """Fixed-range scale: about half the width of a typical rated population (sd ~350-400)."""
    tiers: tuple[tuple[str, float], ...] = field(default=DEFAULT_TIERS)
    demotion_margin: float = 0.0
    divisions: int = 1
    interval_z: float = 2.0
    """Half-width of every rating answer's interval, in sigmas: ``mu +/- z*sigma`` (~95 %)."""
    provisional_sigma: float | None = None
    """A player is provisional while his sigma is above this (None: never for sigma)..."""
    provisional_rounds: int = 0
    """...or while he has played fewer rounds than this (Lichess: "1500?")."""
    min_rounds: int = 0
    """Leaderboard eligibility: at least this many rounds played,"""
    active_days: float | None = None
    """a round within the last this many days (None: no limit),"""
    max_sigma: float | None = None
    """and sigma (grown by the drift since his last round) at most this (None: no bound)."""

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
        for name in ("interval_z", "provisional_sigma", "active_days", "max_sigma"):
            value = getattr(self, name)
            if value is None and name != "interval_z":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (value >= 0 and np.isfinite(value)):
                raise ValueError(f"{name} must be a finite number >= 0{'' if name == 'interval_z' else ' or null'}, "
                                 f"got {value!r}")
            object.__setattr__(self, name, float(value))
        for name, low, high in (("provisional_rounds", 0, 0), ("min_rounds", 0, 0), ("divisions", 1, MAX_DIVISIONS)):
            value = getattr(self, name)
            if isinstance(value, float) and value.is_integer():
                value = int(value)
                object.__setattr__(self, name, value)
            if isinstance(value, bool) or not isinstance(value, int) or value < low or 0 < high < value:
                bounds = f"in [{low}, {high}]" if high else ">= 0"
                raise ValueError(f"{name} must be an integer {bounds}, got {value!r}")
        if len(set(self.tier_names)) != len(self.placements):
            raise ValueError("league and division labels must be unique")

    @functools.cached_property
    def placements(self) -> tuple[Placement, ...]:
        """The placement steps, lowest first: each league's divisions (module docstring)."""
        leagues = [t for _, t in self.tiers]
        steps: list[Placement] = []
        for i, (name, low) in enumerate(self.tiers):
            if 0 < i < len(leagues) - 1 and self.divisions > 1:
                width = (leagues[i + 1] - low) / self.divisions
                steps.extend(Placement(f"{name} {self.divisions - d}", low + d * width, i, self.divisions - d)
                             for d in range(self.divisions))
            else:
                steps.append(Placement(name, -np.inf if i == 0 else low, i, None))
        return tuple(steps)

    @functools.cached_property
    def tier_names(self) -> tuple[str, ...]:
        """Labels of the placement steps (the league names when ``divisions`` is 1)."""
        return tuple(p.label for p in self.placements)

    @property
    def thresholds(self) -> NDArray[np.float64]:
        """Thresholds of the placement steps, the lowest replaced by -inf."""
        return np.array([p.threshold for p in self.placements], dtype=np.float64)

    @functools.cached_property
    def _bounds(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """:attr:`thresholds`, and less the demotion margin, read-only, built once."""
        thresholds = self.thresholds
        demoted = thresholds - self.demotion_margin
        thresholds.flags.writeable = demoted.flags.writeable = False
        return thresholds, demoted

    @functools.cached_property
    def _label_index(self) -> dict[str, int]:
        """Label of each placement step -> its index (labels are unique)."""
        return {label: i for i, label in enumerate(self.tier_names)}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> "DisplayConfig":
        """Build from the JSON form (:meth:`to_dict`), every key optional; a null threshold means -inf."""
        known = {"mode", "k", "center", "scale", "tiers", "demotion_margin", "divisions", *STATUS_KEYS}
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
                "tiers": tiers, "demotion_margin": self.demotion_margin, "divisions": self.divisions,
                **{key: getattr(self, key) for key in STATUS_KEYS}}


def parse_display_configs(raw: str) -> dict[str, DisplayConfig]:
    """The ``DISPLAY_CONFIG`` setting: JSON ladder (or ``"*"``) -> config object; empty: none."""
    if not raw.strip():
        return {}
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError("DISPLAY_CONFIG must be a JSON object mapping ladder -> config")
    return {str(ladder): DisplayConfig.from_dict(cfg) for ladder, cfg in data.items()}


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
    """New tier indices (into ``cfg.placements``, or :data:`UNPLACED`) after a rating change, with
    confidence and hysteresis (module docstring); indices beyond the config count as the top tier."""
    current = np.asarray(current_tier, dtype=np.int64)
    mu_arr = np.asarray(mu, dtype=np.float64)
    sigma_arr = np.asarray(sigma, dtype=np.float64)
    thresholds, demoted = cfg._bounds
    top = len(thresholds) - 1
    lower = thresholds.searchsorted(mu_arr - cfg.k * sigma_arr, side="right") - 1
    upper = demoted.searchsorted(mu_arr + cfg.k * sigma_arr, side="right") - 1
    # np.clip by the ufuncs themselves: its wrapper costs more than a few duels' rows
    lower = np.minimum(np.maximum(lower, 0), top)
    upper = np.minimum(np.maximum(upper, 0), top)
    held = np.where(current == UNPLACED, lower, np.minimum(current, top))
    return np.minimum(np.maximum(held, lower), upper).astype(np.int64)


PLACEMENT_PREFIX = "Placement "
"""Label of a player in a season's placement after k rounds: ``"Placement k"`` (index
``UNPLACED - k``, :func:`placement_index`; ``stream.engine.seasons``). It names no league."""


def placement_index(rounds: ArrayLike) -> NDArray[np.int64]:
    """Tier index of players in placement after ``rounds`` (>= 1) rounds of their season; such an
    index is below :data:`UNPLACED` and :func:`next_tier` places it as it places an unplaced one."""
    return UNPLACED - np.asarray(rounds, dtype=np.int64)


def tier_names(indices: ArrayLike, cfg: DisplayConfig) -> list[str]:
    """Stored tier names of indices (``""``: unplaced, ``"Placement k"`` in placement)."""
    names = cfg.tier_names
    return [names[i] if 0 <= i < len(names) else f"{PLACEMENT_PREFIX}{UNPLACED - i}" if i < UNPLACED else ""
            for i in np.asarray(indices, dtype=np.int64).tolist()]


def tier_indices(names: Sequence[str | bytes | None], cfg: DisplayConfig) -> NDArray[np.int64]:
    """Inverse of :func:`tier_names`: stored names back to indices; unknown or empty -> UNPLACED
    (a dict lookup per name: cheaper than numpy string arrays for a batch's rows)."""
    if len(names) == 0:
        return np.empty(0, dtype=np.int64)
    wanted = [n.decode() if isinstance(n, bytes) else (n or "") for n in names]
    index = cfg._label_index
    out = np.fromiter(map(index.get, wanted, [_UNKNOWN] * len(wanted)), dtype=np.int64, count=len(wanted))
    unknown = np.flatnonzero(out == _UNKNOWN)
    if unknown.size:
        lowest: dict[str, int] | None = None
        for i in unknown.tolist():
            name = wanted[i]
            if not name:
                out[i] = UNPLACED
                continue
            if name.startswith(PLACEMENT_PREFIX) and name[len(PLACEMENT_PREFIX):].isdigit():
                out[i] = UNPLACED - max(int(name[len(PLACEMENT_PREFIX):]), 0)
                continue
            if lowest is None:  # a label stored before ``divisions`` changed: its league's lowest step
                lowest = {}
                for at, step in enumerate(cfg.placements):
                    lowest.setdefault(cfg.tiers[step.league][0], at)
            out[i] = lowest[name] if name in lowest else lowest.get(name.rsplit(" ", 1)[0], UNPLACED)
    return out


_UNKNOWN = -(1 << 40)
""":func:`tier_indices`' marker of a name that is no label of the config (never an index)."""


def league_division(label: str | None, cfg: DisplayConfig) -> tuple[str | None, int | None]:
    """(league, division) of a stored tier label: ``"Gold 2"`` -> ``("Gold", 2)``, a bare league
    name -> ``(name, None)``, unplaced or unknown -> ``(None, None)``."""
    if not label:
        return None, None
    leagues = {name for name, _ in cfg.tiers}
    if label in leagues:
        return label, None
    league, _, division = label.rpartition(" ")
    if league in leagues and division.isdigit() and int(division) >= 1:
        return league, int(division)
    return None, None


def is_provisional(sigma: ArrayLike, rounds: ArrayLike, cfg: DisplayConfig) -> NDArray[np.bool_]:
    """Lichess's "1500?": sigma above ``provisional_sigma`` or fewer than ``provisional_rounds``
    rounds played; the one rule for the API (drifted sigma), RatingChange events and what-if answers."""
    provisional: NDArray[np.bool_] = np.asarray(rounds, dtype=np.int64) < cfg.provisional_rounds
    if cfg.provisional_sigma is not None:
        provisional = provisional | (np.asarray(sigma, dtype=np.float64) > cfg.provisional_sigma)
    return provisional


@dataclass(frozen=True)
class Standing:
    """Players at read time: drifted sigma, interval, provisional, eligible and why not."""

    sigma_now: NDArray[np.float64]
    low: NDArray[np.float64]
    high: NDArray[np.float64]
    provisional: NDArray[np.bool_]
    eligible: NDArray[np.bool_]
    reasons: list[list[str]]


def standing(mu: ArrayLike, sigma_now: ArrayLike, rounds: ArrayLike, days_idle: ArrayLike,
             cfg: DisplayConfig) -> Standing:
    """The :class:`Standing` of players with drifted sigma ``sigma_now``, ``days_idle`` (NaN: never)."""
    mu_a = np.asarray(mu, dtype=np.float64)
    sig = np.asarray(sigma_now, dtype=np.float64)
    played = np.asarray(rounds, dtype=np.int64)
    idle = np.asarray(days_idle, dtype=np.float64)
    provisional = is_provisional(sig, played, cfg)
    checks: list[tuple[NDArray[np.bool_], str]] = [(played < cfg.min_rounds, f"fewer than {cfg.min_rounds} rounds")]
    if cfg.active_days is not None:
        checks.append((~(idle <= cfg.active_days), f"no round in the last {cfg.active_days:g} days"))
    if cfg.max_sigma is not None:
        checks.append((sig > cfg.max_sigma, f"uncertainty (sigma) above {cfg.max_sigma:g}"))
    failing = np.logical_or.reduce([bad for bad, _ in checks])
    reasons = [[why for bad, why in checks if bad[i]] for i in range(mu_a.shape[0])] if failing.any() else \
        [[] for _ in range(mu_a.shape[0])]
    return Standing(sig, mu_a - cfg.interval_z * sig, mu_a + cfg.interval_z * sig, provisional, ~failing, reasons)
