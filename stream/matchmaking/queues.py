"""Matchmaking queues: the ``QUEUES`` setting, parsed and checked.

``QUEUES`` is a JSON object queue name -> ``{"ladder": L, "teams": T, "team_size": S, ...}``
(DESIGN.md "Matchmaking"). ``teams: 2, team_size: 1`` is a duel queue, ``teams: 8, team_size: 1``
an 8-player free-for-all, ``teams: 2, team_size: 5`` a 5v5, ``teams: 1, team_size: 64`` one
64-player lobby (a free-for-all of its members whose parties only share the lobby).

The tolerance a ticket gets widens with its wait, per the queue's ``widening`` schedule (seed 003:
the SC2 ladder "tries to have x=y, but will expand the search if no match is found quickly";
FlexMatch's expansions): each step ``{"after_s", "max_gap", "min_quality"}`` applies from
``after_s`` seconds of wait on, ``max_gap`` being the widest spread of the tickets' ratings (mu,
rating points) in a match and ``min_quality`` the lowest match quality (the ladder's own, the
``/predict`` maths) accepted. A provisional ticket (a member's sigma >= ``provisional_sigma``)
gets its gap multiplied by ``provisional_gap_factor``; a match with a ticket rated at or above
``top_rating`` keeps ``top_max_gap`` / ``top_min_quality`` whatever the wait; with
``max_latency_ms`` every ticket of a match must reach a common region within it. Engine-free of
I/O: the setting's text comes in as a string.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, fields
from typing import Any

from stream.engine.ladders import setting_entry, setting_object

QUEUE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
"""A queue name (the ladder name pattern)."""
MAX_PLAYERS = 1024
"""Players per match at most (teams x team_size)."""


@dataclass(frozen=True)
class WideningStep:
    """From ``after_s`` seconds of wait on: rating spread <= ``max_gap``, quality >= ``min_quality``."""

    after_s: float
    max_gap: float
    min_quality: float = 0.0


DEFAULT_WIDENING: tuple[WideningStep, ...] = (
    WideningStep(0.0, 50.0, 0.9),
    WideningStep(5.0, 100.0, 0.8),
    WideningStep(15.0, 200.0, 0.6),
    WideningStep(30.0, 400.0, 0.3),
    WideningStep(60.0, math.inf, 0.0),
)
"""The default schedule: tight at first, anyone after a minute (osu!'s "match within 90 s");
``stream simulate`` measures it against a fixed window (README, BENCHMARKS.md)."""


@dataclass(frozen=True)
class Tolerance:
    """What a ticket (or a match) accepts: rating spread and match quality."""

    max_gap: float
    min_quality: float


@dataclass(frozen=True)
class QueueConfig:
    """One queue's configuration (module docstring)."""

    name: str
    ladder: str
    teams: int = 2
    team_size: int = 1
    widening: tuple[WideningStep, ...] = DEFAULT_WIDENING
    max_wait_s: float = 300.0
    tick_interval_s: float = 1.0
    provisional_sigma: float = 200.0
    provisional_gap_factor: float = 1.5
    top_rating: float | None = None
    top_max_gap: float = math.inf
    top_min_quality: float = 0.0
    max_latency_ms: float | None = None

    @property
    def players(self) -> int:
        """Players per match: teams x team_size."""
        return self.teams * self.team_size

    @property
    def singles(self) -> bool:
        """Every party is one player (team_size 1): duels and free-for-alls."""
        return self.team_size == 1

    def step(self, wait_s: float) -> WideningStep:
        """The widening step in force after ``wait_s`` seconds."""
        current = self.widening[0]
        for step in self.widening:
            if step.after_s <= wait_s:
                current = step
        return current


ENTRY_KEYS = tuple(f.name for f in fields(QueueConfig) if f.name != "name")
STEP_KEYS = tuple(f.name for f in fields(WideningStep))


def _number(where: str, value: object, *, low: float = 0.0, inclusive: bool = True, infinite: bool = False) -> float:
    """A finite number >= low (> low unless inclusive); None means infinity where allowed."""
    if value is None and infinite:
        return math.inf
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{where}: must be a number{' or null (no limit)' if infinite else ''}")
    if value < low or (value == low and not inclusive):
        raise ValueError(f"{where}: must be {'>=' if inclusive else '>'} {low:g}")
    return float(value)


def _integer(where: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{where}: must be an integer >= 1")
    return value


def _steps(where: str, raw: object) -> tuple[WideningStep, ...]:
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"{where}: must be a non-empty list of {{{', '.join(STEP_KEYS)}}}")
    steps = []
    for i, item in enumerate(raw):
        at = f"{where}[{i}]"
        if not isinstance(item, dict):
            raise ValueError(f"{at}: must be an object with keys {', '.join(STEP_KEYS)}")
        unknown = sorted(set(item) - set(STEP_KEYS))
        if unknown:
            raise ValueError(f"{at}: unknown key {unknown[0]!r}; known: {', '.join(STEP_KEYS)}")
        for key in ("after_s", "max_gap"):
            if key not in item:
                raise ValueError(f"{at}.{key}: missing")
        step = WideningStep(
            after_s=_number(f"{at}.after_s", item["after_s"]),
            max_gap=_number(f"{at}.max_gap", item["max_gap"], infinite=True),
            min_quality=_number(f"{at}.min_quality", item.get("min_quality", 0.0)),
        )
        if step.min_quality > 1.0:
            raise ValueError(f"{at}.min_quality: must be <= 1")
        steps.append(step)
    if steps[0].after_s != 0.0:
        raise ValueError(f"{where}[0].after_s: the first step must start at 0")
    for i in range(1, len(steps)):
        if steps[i].after_s <= steps[i - 1].after_s:
            raise ValueError(f"{where}[{i}].after_s: steps must start in increasing order")
    return tuple(steps)


def queue_config(name: str, raw: object) -> QueueConfig:
    """One ``QUEUES`` entry; ValueError naming ``QUEUES["name"].key``."""
    where = f"QUEUES[{json.dumps(name)}]"
    if not QUEUE_NAME.match(name):
        raise ValueError(f"{where}: not a queue name (pattern {QUEUE_NAME.pattern})")
    raw = setting_entry(where, raw, ENTRY_KEYS, ValueError)
    ladder = raw.get("ladder")
    if not isinstance(ladder, str) or not QUEUE_NAME.match(ladder):
        raise ValueError(f"{where}.ladder: must be a ladder name")
    kw: dict[str, Any] = {"name": name, "ladder": ladder}
    for key in ("teams", "team_size"):
        if key in raw:
            kw[key] = _integer(f"{where}.{key}", raw[key])
    if "widening" in raw:
        kw["widening"] = _steps(f"{where}.widening", raw["widening"])
    for key in ("max_wait_s", "tick_interval_s"):
        if key in raw:
            kw[key] = _number(f"{where}.{key}", raw[key], inclusive=False)
    for key in ("provisional_sigma", "top_min_quality"):
        if key in raw:
            kw[key] = _number(f"{where}.{key}", raw[key])
    if "provisional_gap_factor" in raw:
        kw["provisional_gap_factor"] = _number(f"{where}.provisional_gap_factor", raw["provisional_gap_factor"], low=1.0)
    if "top_max_gap" in raw:
        kw["top_max_gap"] = _number(f"{where}.top_max_gap", raw["top_max_gap"], infinite=True)
    if raw.get("top_rating") is not None:
        value = raw["top_rating"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"{where}.top_rating: must be a number or null")
        kw["top_rating"] = float(value)
    if raw.get("max_latency_ms") is not None:
        kw["max_latency_ms"] = _number(f"{where}.max_latency_ms", raw["max_latency_ms"], inclusive=False)
    if kw.get("top_min_quality", 0.0) > 1.0:
        raise ValueError(f"{where}.top_min_quality: must be <= 1")
    config = QueueConfig(**kw)
    if config.players < 2:
        raise ValueError(f"{where}.team_size: a match needs at least 2 players (teams x team_size)")
    if config.players > MAX_PLAYERS:
        raise ValueError(f"{where}.team_size: teams x team_size must be <= {MAX_PLAYERS}")
    return config


def parse_queues(text: str) -> dict[str, QueueConfig]:
    """Parse ``QUEUES`` (empty: no queue). Raises ValueError whose message names the bad key."""
    data = setting_object("QUEUES", text, 'queue name -> {"ladder", "teams", "team_size", ...}', ValueError)
    return {str(name): queue_config(str(name), raw) for name, raw in data.items()}
