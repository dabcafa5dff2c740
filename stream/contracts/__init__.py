"""Event contracts: formats, validation and JSON Schemas (imports nothing of ours but settings).

See docs/contracts.md "Contracts" and the schema files in ``schemas/``.
"""

from stream.contracts.events import DeadLetter, PlayerUpdate, RatingChange
from stream.contracts.round import (
    DEFAULT_LADDER,
    LADDER_PATTERN,
    REASONS,
    UNVERIFIED_PLAYER_UPDATE,
    Limits,
    RoundRejected,
    RoundResult,
    Standing,
    parse_round,
)
from stream.contracts.schemas import SCHEMA_NAMES, SchemaError, load_schema, validate

__all__ = [
    "DEFAULT_LADDER", "LADDER_PATTERN", "REASONS", "SCHEMA_NAMES", "UNVERIFIED_PLAYER_UPDATE",
    "DeadLetter", "Limits", "PlayerUpdate", "RatingChange", "RoundRejected", "RoundResult",
    "SchemaError", "Standing", "load_schema", "parse_round", "validate",
]
