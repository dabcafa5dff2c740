"""Parse a round with ``parse_round`` and with the JSON Schema, for the parity tests: the reader states
the rules of ``schemas/round-result.v2.json`` itself, and these tests check the two agree."""

from __future__ import annotations

from stream.contracts import Limits, RoundRejected, parse_round
from stream.contracts.round import (BAD_LADDER, BAD_PLAYER_WEIGHT, BAD_RANK, BAD_WEIGHT, EMPTY_TEAM, NOT_JSON,
                                    ROUND_TOO_LARGE, SCHEMA)
from stream.contracts.schemas import ROUND_RESULT, SchemaError, validate

SCHEMA_RULES = (SCHEMA, BAD_LADDER, BAD_WEIGHT, BAD_RANK, EMPTY_TEAM, BAD_PLAYER_WEIGHT)
"""The reasons of the rules the schema states too."""
CODE_RULES = ("cannot be mixed", "is not an RFC 3339", "MIN_WEIGHT", "got nan")
"""Messages of rejections under those reasons that are the contract's own (docs/contracts.md): mixed
standings forms, an offset without a colon, the weight limits, a NaN player weight."""


def schema_and_reader(raw: str, limits: Limits) -> tuple[bool, bool]:
    """Whether the schema refuses ``raw``, and whether ``parse_round`` refuses it by one of the schema's
    rules (a round it refuses before them, too large or nested too deep, counts as the schema's verdict)."""
    try:
        validate(ROUND_RESULT, raw)
        schema_refuses = False
    except SchemaError:
        schema_refuses = True
    try:
        parse_round(raw, limits=limits)
    except RoundRejected as rejected:
        if rejected.reason in (ROUND_TOO_LARGE, NOT_JSON):
            return schema_refuses, schema_refuses
        return schema_refuses, rejected.reason in SCHEMA_RULES and not any(m in rejected.message for m in CODE_RULES)
    return schema_refuses, False
