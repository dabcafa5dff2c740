"""The JSON Schemas of the events (``schemas/<name>.<version>.json``), compiled once with fastjsonschema.

Every event the service emits is checked against its schema in tests with :func:`validate`;
``RoundResult`` input is checked by :func:`stream.contracts.round.parse_round` with the same
compiled validator.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, Callable

import fastjsonschema

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
"""Current versions that are not v1: ``round-result`` v2 adds teams and partial play (every v1
round is a valid v2 round; the v1 file stays in ``schemas/`` for producers pinned to it);
``rating-change`` v2 adds the events of corrections (``kind``, ``correction_id``; every v1 event
is a valid v2 event), v3 the player's ``league`` and ``division`` and ``performance: null`` for a
model without performances (every v2 event is a valid v3 event), v4 ``team`` and ``weight`` in the
changes of rounds with teams or partial play (a plain round's change is a v3 event), v5 ``provisional``
(written in every event, not required: every v4 event is a valid v5 event);
``player-update`` v2 adds ``team`` and ``weight`` per entry (every v1 message is a valid v2 message)."""

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
