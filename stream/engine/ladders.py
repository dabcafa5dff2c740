"""Which model rates each ladder: the ``LADDERS`` setting (a JSON object ladder or ``"*"``, the
fallback -> ``{"model", "params", "display", "seasons"}``), resolved once for the worker, replay,
API and CLI alike. ``model``: an Elo-MMR preset or a rating-only model (``"*"``'s, with its params,
if absent); ``params`` replace the model's defaults; ``display`` (else ``DISPLAY_CONFIG``'s entry,
else ``"*"``'s); ``seasons`` (Elo-MMR only). ``ENGINE_PRESET`` is the ``"*"`` model when none is named.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .display import DEFAULT_LADDER_KEY, DisplayConfig, parse_display_configs
from .models import MODELS, Model
from .params import DEFAULT_PRESET, PRESETS, Params
from .ratings import ModelParams
from .season_schedule import Seasons, with_started

ENTRY_KEYS = ("model", "params", "display", "seasons")
"""The keys a ``LADDERS`` entry may have."""
LADDER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
"""A ladder name (RoundResult's ``ladder`` pattern)."""


class LaddersError(ValueError):
    """``LADDERS`` (or ``ENGINE_PRESET`` / ``DISPLAY_CONFIG``) is invalid; the message says where."""


@dataclass(frozen=True)
class LadderConfig:
    """One ladder's resolved configuration: model name, its parameters, display config."""

    model: str
    params: Params | ModelParams
    display: DisplayConfig = field(default_factory=DisplayConfig)

    @property
    def rating_model(self) -> Model | None:
        """The rating-only model (None for an Elo-MMR preset)."""
        return None if isinstance(self.params, Params) else MODELS[self.model]

    @property
    def elo_mmr(self) -> Params:
        """The Elo-MMR parameters (TypeError for a rating-only model)."""
        if not isinstance(self.params, Params):
            raise TypeError(f"model {self.model!r} is not an Elo-MMR preset")
        return self.params

    @property
    def model_params(self) -> ModelParams:
        """The rating-only model's parameters (TypeError for an Elo-MMR preset)."""
        if isinstance(self.params, Params):
            raise TypeError(f"model {self.model!r} is an Elo-MMR preset")
        return self.params

    @property
    def seasons(self) -> Seasons | None:
        """The ladder's season schedule (``stream.engine.seasons``; None: none, or a rating-only model)."""
        return self.params.season if isinstance(self.params, Params) else None

    @property
    def draws_rate(self) -> bool:
        """Whether the ladder's model rates a draw (what phase one, corrections, backfill and replay ask)."""
        return self.params.draws_rate

    @property
    def newcomer(self) -> Params:
        """Parameters whose :meth:`PlayerState.new` is the model's prior (mu_noob, sig_noob)."""
        if isinstance(self.params, Params):
            return self.params
        return Params(name=self.model, mu_noob=self.params.mu_noob, sig_noob=self.params.sig_noob)

    @functools.cached_property
    def digest(self) -> str:
        """A short digest of the parameters (recorded on the ladder with its model), computed once."""
        return hashlib.sha1(repr(self.params).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Ladders:
    """Every configured ladder's :class:`LadderConfig` and the fallback (``"*"``)."""

    entries: Mapping[str, LadderConfig]
    fallback: LadderConfig

    def of(self, ladder: str) -> LadderConfig:
        """The ladder's configuration, else the fallback."""
        return self.entries.get(ladder) or self.fallback


def with_schedules(ladders: Ladders, started: Mapping[str, Sequence[Mapping[str, Any]]]) -> Ladders:
    """``ladders`` with the seasons started since (``season_schedule.with_started``); ValueError if not."""
    entries = dict(ladders.entries)
    for ladder, seasons in started.items():
        cfg = ladders.of(ladder)
        if not isinstance(cfg.params, Params):
            raise ValueError(f"ladder {ladder!r}: seasons need an Elo-MMR preset; model {cfg.model!r} is rating-only")
        try:
            merged = with_started(cfg.params.season or Seasons(), seasons)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"ladder {ladder!r}: the seasons started in Redis do not merge with LADDERS: {exc}") from None
        if merged is not cfg.params.season:
            entries[ladder] = dataclasses.replace(cfg, params=cfg.params.with_(season=merged))
    return Ladders(entries, ladders.fallback)


def setting_object(setting: str, text: str, mapping: str, error: type[ValueError]) -> dict[str, Any]:
    """A JSON-object setting (``LADDERS``, ``QUEUES``; empty: ``{}``) decoded, else ``error``."""
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise error(f"{setting}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise error(f"{setting}: must be a JSON object mapping {mapping}")
    return data


def setting_entry(where: str, raw: object, keys: Sequence[str], error: type[ValueError]) -> dict[str, Any]:
    """One entry of such a setting: an object whose keys are among ``keys``; else ``error`` naming ``where``."""
    if not isinstance(raw, dict):
        raise error(f"{where}: must be an object with keys {', '.join(keys)}")
    unknown = sorted(set(raw) - set(keys))
    if unknown:
        raise error(f"{where}: unknown key {unknown[0]!r}; known: {', '.join(keys)}")
    return raw


def model_params(model: str, overrides: Mapping[str, Any], where: str) -> Params | ModelParams:
    """The named model's defaults with ``overrides``; :class:`LaddersError` naming ``where``."""
    if model in PRESETS:
        base: Params | ModelParams = PRESETS[model]
    elif model in MODELS:
        base = MODELS[model].params
    else:
        raise LaddersError(f"{where}: unknown model {model!r}; known: {', '.join([*PRESETS, *MODELS])}")
    known = {f.name for f in dataclasses.fields(base)} - {"name"}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise LaddersError(f"{where}: model {model!r} has no parameter {unknown[0]!r}; known: {', '.join(sorted(known))}")
    flags = {f.name for f in dataclasses.fields(base) if isinstance(getattr(base, f.name), bool)}
    for name, value in overrides.items():
        if name in flags:
            if not isinstance(value, bool):
                raise LaddersError(f"{where}: parameter {name!r} must be true or false, got {value!r}")
        elif isinstance(value, bool) or not isinstance(value, (int, float, str, type(None))):
            raise LaddersError(f"{where}: parameter {name!r} must be a number, got {value!r}")
    if not overrides:
        return base
    try:
        return dataclasses.replace(base, **overrides)
    except (TypeError, ValueError) as exc:
        raise LaddersError(f"{where}: {exc}") from None


def _entry(key: str, raw: object) -> dict[str, Any]:
    where = f"LADDERS[{key!r}]"
    if key != DEFAULT_LADDER_KEY and not LADDER_NAME.match(key):
        raise LaddersError(f"{where}: not a ladder name (pattern {LADDER_NAME.pattern}) nor \"*\"")
    raw = setting_entry(where, raw, ENTRY_KEYS, LaddersError)
    if "model" in raw and not isinstance(raw["model"], str):
        raise LaddersError(f"{where}.model: must be a model name")
    if "params" in raw and not isinstance(raw["params"], dict):
        raise LaddersError(f"{where}.params: must be an object of parameter -> value")
    if "params" in raw and "model" not in raw:
        raise LaddersError(f"{where}.params: give the model they are for (\"model\")")
    return raw


def _display(key: str, raw: object) -> DisplayConfig:
    if not isinstance(raw, dict):
        raise LaddersError(f"LADDERS[{key!r}].display: must be an object")
    try:
        return DisplayConfig.from_dict(raw)
    except (TypeError, ValueError) as exc:
        raise LaddersError(f"LADDERS[{key!r}].display: {exc}") from None


def _seasoned(key: str, params: Params | ModelParams, raw: object) -> Params | ModelParams:
    """``params`` with the entry's season schedule (``stream.engine.seasons``), if it gives one."""
    if raw is None:
        return params
    if not isinstance(params, Params):
        raise LaddersError(f"LADDERS[{key!r}].seasons: seasons need an Elo-MMR preset (the soft reset is "
                           f"Elo-MMR's diffusion); model {getattr(params, 'name', '?')!r} is rating-only")
    try:
        return params.with_(season=Seasons.from_dict(raw))  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise LaddersError(f"LADDERS[{key!r}].seasons: {exc}") from None


def _check_shares(key: str, params: Params | ModelParams, display: DisplayConfig) -> None:
    """League shares, if given, describe the display's leagues, one each."""
    season = params.season if isinstance(params, Params) else None
    if season is not None and season.leagues is not None and season.leagues.leagues != len(display.tiers):
        raise LaddersError(f"LADDERS[{key!r}].seasons.shares: {season.leagues.leagues} leagues (shares"
                           f"{' and top' if season.leagues.top else ''}) for the display's {len(display.tiers)}")


def parse_ladders(raw: str, *, engine_preset: str = DEFAULT_PRESET, display_config: str = "") -> Ladders:
    """Resolve ``LADDERS`` and its shorthands (module docstring); :class:`LaddersError` if invalid."""
    if engine_preset not in PRESETS:
        raise LaddersError(f"ENGINE_PRESET: unknown preset {engine_preset!r}; known: {', '.join(PRESETS)}")
    try:
        displays = parse_display_configs(display_config)
    except (TypeError, ValueError) as exc:
        raise LaddersError(f"DISPLAY_CONFIG: {exc}") from None
    data = setting_object("LADDERS", raw, 'ladder (or "*") -> {model, params, display}', LaddersError)
    entries = {str(key): _entry(str(key), value) for key, value in data.items()}
    star = entries.get(DEFAULT_LADDER_KEY, {})
    star_model = star.get("model", engine_preset)
    star_params = model_params(star_model, star.get("params", {}), f"LADDERS[{DEFAULT_LADDER_KEY!r}]")
    star_display = _display(DEFAULT_LADDER_KEY, star["display"]) if "display" in star else \
        displays.get(DEFAULT_LADDER_KEY, DisplayConfig())
    fallback = LadderConfig(star_model, _seasoned(DEFAULT_LADDER_KEY, star_params, star.get("seasons")), star_display)
    _check_shares(DEFAULT_LADDER_KEY, fallback.params, star_display)
    resolved: dict[str, LadderConfig] = {}
    for name in dict.fromkeys([*displays, *entries]):
        if name == DEFAULT_LADDER_KEY:
            continue
        entry = entries.get(name, {})
        if "model" in entry:
            model, params = entry["model"], model_params(entry["model"], entry.get("params", {}), f"LADDERS[{name!r}]")
        else:
            model, params = fallback.model, fallback.params
        display = _display(name, entry["display"]) if "display" in entry else displays.get(name, fallback.display)
        if "seasons" in entry:
            params = _seasoned(name, params, entry["seasons"])
        _check_shares(name, params, display)
        resolved[name] = LadderConfig(model, params, display)
    return Ladders(resolved, fallback)
