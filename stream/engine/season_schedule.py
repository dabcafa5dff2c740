"""A ladder's season schedule: when each season starts, its soft reset's settings, and which
season a time falls in.

The season of a round is a pure function of its time and the schedule (:func:`season_of`), so
the stream, ``stream replay``, backfill and a correction's re-rate see the same season boundaries
whatever process rates a ladder's history. The reset maths is ``stream.engine.seasons``; this
module imports nothing of the engine (``Params`` holds a :class:`Seasons`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np

from .bonus import BonusPool
from .league_shares import LeagueShares

SEASON_KEYS = ("schedule", "sigma_to", "sigma_share", "mu_pull", "centre", "placement_rounds", "shares", "top",
               "bonus_per_day", "bonus_cap")
"""The keys of a ``LADDERS`` entry's ``seasons`` object."""


@dataclass(frozen=True, slots=True)
class Seasons:
    """A ladder's season schedule and its soft reset.

    ``starts`` (epoch seconds, strictly increasing) and ``names`` (unique) are the seasons in
    order. ``sigma_to`` (None: sigma is kept) and ``sigma_share`` in [0, 1] raise sigma;
    ``mu_pull`` in [0, 1] pulls mu toward ``centre`` (None: the model's newcomer mean
    ``mu_noob``). ``placement_rounds``: a player's first rounds of a season that show no league
    (display only)."""

    starts: tuple[float, ...] = ()
    names: tuple[str, ...] = ()
    sigma_to: float | None = None
    sigma_share: float = 1.0
    mu_pull: float = 0.0
    centre: float | None = None
    placement_rounds: int = 0
    leagues: LeagueShares | None = None
    """The leagues' target shares of the active players (``stream.engine.league_shares``; None: the
    display config's thresholds only)."""
    bonus: BonusPool | None = None
    """The season's bonus pool (``stream.engine.bonus``; None: none), display only."""
    centres: tuple[float | None, ...] = ()
    """Each season's own centre (a schedule entry's ``centre``, e.g. the ladder's mean mu frozen
    when the season was scheduled: ``stream season start --centre-from-ladder``); None: ``centre``."""

    def __post_init__(self) -> None:
        if len(self.starts) != len(self.names):
            raise ValueError("every season needs a name and a start")
        if any(not math.isfinite(t) for t in self.starts) or any(b <= a for a, b in zip(self.starts, self.starts[1:])):
            raise ValueError("season starts must be finite and strictly increasing")
        if len(set(self.names)) != len(self.names) or not all(self.names):
            raise ValueError("season names must be unique and non-empty")
        if self.sigma_to is not None and not (self.sigma_to > 0 and math.isfinite(self.sigma_to)):
            raise ValueError(f"sigma_to must be a finite number > 0 or null, got {self.sigma_to!r}")
        for name in ("sigma_share", "mu_pull"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value!r}")
        if self.centre is not None and not math.isfinite(self.centre):
            raise ValueError(f"centre must be a finite number or null, got {self.centre!r}")
        if self.centres and len(self.centres) != len(self.names):
            raise ValueError("one centre (or null) per season")
        if any(c is not None and not math.isfinite(c) for c in self.centres):
            raise ValueError("a season's centre must be a finite number or null")
        if isinstance(self.placement_rounds, bool) or not isinstance(self.placement_rounds, int) \
                or self.placement_rounds < 0:
            raise ValueError(f"placement_rounds must be an integer >= 0, got {self.placement_rounds!r}")

    def centre_of(self, index: np.ndarray, mu_noob: float) -> np.ndarray:
        """The centre a player entering season ``index`` (per row) is pulled toward: the season's
        own, else ``centre``, else the model's newcomer mean ``mu_noob``."""
        default = mu_noob if self.centre is None else self.centre
        own = np.array([default] + [default if c is None else c for c in (self.centres or (None,) * len(self.names))])
        return own[np.clip(np.asarray(index, dtype=np.int64), 0, len(self.names))]

    def name_of(self, index: int) -> str:
        """The name of season ``index`` (:func:`season_of`); ``""`` before the first start."""
        return self.names[index - 1] if 1 <= index <= len(self.names) else ""

    def index_of(self, name: str) -> int:
        """The index of the season named ``name`` (KeyError if there is none)."""
        if name not in self.names:
            raise KeyError(name)
        return self.names.index(name) + 1

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Seasons:
        """Build from the JSON form (``LADDERS[ladder].seasons``): ``{"schedule": [{"name", "start"}],
        "sigma_to", "sigma_share", "mu_pull", "centre", "placement_rounds", "shares", "top"}``, every key
        optional (``shares``/``top``: :class:`~stream.engine.league_shares.LeagueShares`;
        ``bonus_per_day``/``bonus_cap``: :class:`~stream.engine.bonus.BonusPool`);
        ``start`` is an ISO 8601 time (with its zone) or epoch seconds. ValueError naming the key."""
        if not isinstance(raw, Mapping):
            raise ValueError(f"must be an object with keys {', '.join(SEASON_KEYS)}")
        unknown = sorted(set(raw) - set(SEASON_KEYS))
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r}; known: {', '.join(SEASON_KEYS)}")
        schedule = raw.get("schedule", [])
        if not isinstance(schedule, list):
            raise ValueError("schedule: must be a list of {\"name\", \"start\"}")
        names: list[str] = []
        starts: list[float] = []
        centres: list[float | None] = []
        for i, entry in enumerate(schedule):
            if not isinstance(entry, Mapping) or not {"name", "start"} <= set(entry) <= {"name", "start", "centre"} \
                    or not isinstance(entry["name"], str):
                raise ValueError(f"schedule[{i}]: must be {{\"name\": text, \"start\": time, "
                                 f"\"centre\": number (optional)}}")
            centre = entry.get("centre")
            if centre is not None and (isinstance(centre, bool) or not isinstance(centre, (int, float))):
                raise ValueError(f"schedule[{i}].centre: must be a number, got {centre!r}")
            names.append(entry["name"])
            starts.append(parse_time(entry["start"], f"schedule[{i}].start"))
            centres.append(None if centre is None else float(centre))
        kwargs: dict[str, Any] = {}
        for key in ("sigma_to", "sigma_share", "mu_pull", "centre"):
            if key in raw and raw[key] is not None:
                if isinstance(raw[key], bool) or not isinstance(raw[key], (int, float)):
                    raise ValueError(f"{key}: must be a number, got {raw[key]!r}")
                kwargs[key] = float(raw[key])
        if "placement_rounds" in raw:
            value = raw["placement_rounds"]
            kwargs["placement_rounds"] = int(value) if isinstance(value, float) and value.is_integer() else value
        if "shares" in raw:
            kwargs["leagues"] = LeagueShares.from_dict(raw)
        elif "top" in raw:
            raise ValueError("top: goes with shares")
        if "bonus_per_day" in raw or "bonus_cap" in raw:
            rate, cap = raw.get("bonus_per_day"), raw.get("bonus_cap")
            if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in (rate, cap)):
                raise ValueError("bonus_per_day and bonus_cap: give both, as numbers")
            kwargs["bonus"] = BonusPool(float(rate), float(cap))  # type: ignore[arg-type]
        return cls(starts=tuple(starts), names=tuple(names),
                   centres=tuple(centres) if any(c is not None for c in centres) else (), **kwargs)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, inverse of :meth:`from_dict` (starts as ISO 8601 UTC)."""
        return {"schedule": [{"name": n, "start": iso_time(t), **({} if c is None else {"centre": c})}
                             for n, t, c in zip(self.names, self.starts, self.centres or (None,) * len(self.names))],
                "sigma_to": self.sigma_to, "sigma_share": self.sigma_share, "mu_pull": self.mu_pull,
                "centre": self.centre, "placement_rounds": self.placement_rounds,
                **({} if self.leagues is None else {"shares": list(self.leagues.shares), "top": self.leagues.top}),
                **({} if self.bonus is None else {"bonus_per_day": self.bonus.per_day, "bonus_cap": self.bonus.cap})}


def with_started(seasons: Seasons, entries: Sequence[Mapping[str, Any]]) -> Seasons:
    """``seasons`` (a ``LADDERS`` entry's schedule) with the seasons started since (``stream season
    start``, kept in Redis: ``{"name", "start" (epoch seconds), "centre" (optional)}`` each). An entry
    whose name the schedule already has is that season (the configuration and Redis may both hold
    it); the others are added, by start. The one merge the workers, backfill, corrections and the
    read side use, so they see the same boundaries. ValueError if the result is not a schedule
    (starts not strictly increasing)."""
    known = set(seasons.names)
    added = [e for e in entries if e["name"] not in known]
    if not added:
        return seasons
    own = seasons.centres or (None,) * len(seasons.names)
    merged = sorted([*zip(seasons.starts, seasons.names, own),
                     *((float(e["start"]), str(e["name"]), None if e.get("centre") is None else float(e["centre"]))
                       for e in added)], key=lambda row: row[0])
    centres = tuple(c for _, _, c in merged)
    return dataclasses.replace(seasons, starts=tuple(t for t, _, _ in merged), names=tuple(n for _, n, _ in merged),
                               centres=centres if any(c is not None for c in centres) else ())


def parse_time(value: object, where: str) -> float:
    """Epoch seconds of an ISO 8601 time with its zone (``Z`` allowed) or of a number."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            moment = None
        if moment is not None and moment.tzinfo is not None:
            return moment.timestamp()
    raise ValueError(f"{where}: not an ISO 8601 time with its zone (e.g. 2026-01-01T00:00:00Z) "
                     f"nor epoch seconds: {value!r}")


def iso_time(epoch: float) -> str:
    """ISO 8601 UTC text of epoch seconds (``Z`` suffix)."""
    return datetime.fromtimestamp(epoch, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def season_of(times: np.ndarray | float, seasons: Seasons) -> np.ndarray:
    """Season index of each time: how many starts are at or before it (0: before the first;
    a NaN time, never played, is -1)."""
    t = np.asarray(times, dtype=np.float64)
    index = np.searchsorted(np.asarray(seasons.starts, dtype=np.float64), t, side="right").astype(np.int64)
    return np.where(np.isnan(t), -1, index)


def entering(last_time: np.ndarray, times: np.ndarray, seasons: Seasons) -> np.ndarray:
    """Which players start a new season with this round: played before, in an earlier season."""
    last = season_of(last_time, seasons)
    return (last >= 0) & (last < season_of(times, seasons))
