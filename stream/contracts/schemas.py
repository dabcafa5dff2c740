"""The JSON Schemas of the events (``schemas/<name>.<version>.json``), compiled once with fastjsonschema
(:func:`validator`: the correction and ticket readers'; :func:`validate`: the tests' and phase two's check of an
update); ``parse_round`` states the round rules itself (the tests check it against ``round-result``)."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any, Callable

import fastjsonschema
import fastjsonschema.draft04

SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schemas"
"""Where the schema files live: ``schemas/`` at the top of the repository."""

ROUND_RESULT = "round-result"
PLAYER_UPDATE = "player-update"
RATING_CHANGE = "rating-change"
DEAD_LETTER = "dead-letter"
CORRECTION = "correction"
MATCH_TICKET = "match-ticket"
MATCH = "match"
TICKET_EVENT = "ticket-event"
SCHEMA_NAMES = (ROUND_RESULT, PLAYER_UPDATE, RATING_CHANGE, DEAD_LETTER, CORRECTION, MATCH_TICKET, MATCH, TICKET_EVENT)
SCHEMA_VERSION = "v1"
"""The version of every schema not named in :data:`SCHEMA_VERSIONS`."""
SCHEMA_VERSIONS = {ROUND_RESULT: "v2", RATING_CHANGE: "v5", PLAYER_UPDATE: "v2"}
"""Current versions that are not v1; each version accepts every message of the one before (the older
files stay in ``schemas/``). What each adds: docs/contracts.md."""

DATE_TIME = re.compile(fastjsonschema.draft04.CodeGeneratorDraft04.FORMAT_REGEXS["date-time"])
"""The schemas' ``date-time`` format, as their validator reads it (``parse_round`` checks ``occurred_at`` by it)."""

SchemaError = fastjsonschema.JsonSchemaValueException
"""Raised by :func:`validate`; ``.path`` names the offending field, ``.message`` says why."""


def schema_path(name: str, version: str | None = None) -> Path:
    """File of the schema called ``name`` (one of :data:`SCHEMA_NAMES`), current version unless given."""
    if name not in SCHEMA_NAMES:
        raise KeyError(f"unknown schema {name!r}; known: {', '.join(SCHEMA_NAMES)}")
    return SCHEMA_DIR / f"{name}.{version or SCHEMA_VERSIONS.get(name, SCHEMA_VERSION)}.json"


@cache
def load_schema(name: str) -> dict[str, Any]:
    """The parsed JSON Schema document ``name``."""
    with schema_path(name).open(encoding="utf-8") as fh:
        return json.load(fh)  # type: ignore[no-any-return]


@cache
def validator(name: str) -> Callable[[Any], Any]:
    """The compiled validator of schema ``name`` (raises :data:`SchemaError`)."""
    return fastjsonschema.compile(load_schema(name))


def validate(name: str, data: Any) -> None:
    """Check ``data`` (a decoded JSON value, or a JSON string/bytes) against schema ``name``."""
    if isinstance(data, (bytes, bytearray, str)):
        data = json.loads(data)
    validator(name)(data)
