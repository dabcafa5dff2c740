"""Parse a round with and without one of ``parse_round``'s fast paths, for the parity tests."""

from __future__ import annotations

import stream.contracts.round as round_module
from stream.contracts import Limits, RoundRejected, parse_round


def verdict(raw: str, limits: Limits) -> object:
    """What parsing ``raw`` gives: the round as a dict, or the rejection's reason, field, message
    and round."""
    try:
        return parse_round(raw, limits=limits).to_dict()
    except RoundRejected as rejected:
        return rejected.reason, rejected.field, rejected.message, None if rejected.round is None else rejected.round.to_dict()


def with_and_without(fast_path: str, raw: str, limits: Limits) -> tuple[str, str]:
    """The verdicts (as reprs, so that NaN compares equal) with the module-level predicate
    ``fast_path`` as it is, and with it always saying no (every round through the validator)."""
    fast = verdict(raw, limits)
    original = getattr(round_module, fast_path)
    setattr(round_module, fast_path, lambda *args: False)
    try:
        slow = verdict(raw, limits)
    finally:
        setattr(round_module, fast_path, original)
    return repr(fast), repr(slow)
