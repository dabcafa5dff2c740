"""``Correction``: a void, an amendment or a late insert of a round (topic ``corrections``; messages in
docs/history.md), and :func:`parse_correction`, its validator (schema ``schemas/correction.v1.json``).
``correction_id``, the idempotency key, defaults to one derived from the content.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from stream.contracts.round import (BAD_CORRECTION, DEFAULT_LADDER, LADDER_PATTERN, NO_OUTCOME, SCHEMA, Limits,
                                    RoundRejected, RoundResult, decode_object, parse_round)
from stream.contracts.schemas import CORRECTION

VOID = "void"
AMEND = "amend"
INSERT = "insert"
"""Rate the ladder's ``late`` rounds in their place (phase one publishes it for a late round of a ladder
rated by occurred_at)."""


@dataclass(frozen=True)
class Correction:
    """A validated correction; ``round`` is the amended round (None for a void)."""

    kind: str
    ladder: str
    round_id: str
    correction_id: str
    reason: str = ""
    round: RoundResult | None = None

    def content_hash(self) -> str:
        """sha256 (hex) of what the correction does (kind, ladder, round, amended content)."""
        canonical = [self.kind, self.ladder, self.round_id, None if self.round is None else self.round.content_hash()]
        return hashlib.sha256(json.dumps(canonical, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "ladder": self.ladder, "round_id": self.round_id,
                               "correction_id": self.correction_id}
        if self.reason:
            out["reason"] = self.reason
        if self.round is not None:
            out["round"] = self.round.to_dict()
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False)


def parse_correction(raw: bytes | str | dict[str, Any], *, limits: Limits) -> Correction:
    """Validate one ``corrections`` message; raise :class:`RoundRejected` (reason ``bad_correction``,
    or the amended round's own reason with its field under ``round.``)."""
    data = decode_object(raw, limits, CORRECTION, what="correction", not_object=SCHEMA, invalid=BAD_CORRECTION)
    kind = data["kind"]
    amended: RoundResult | None = None
    if kind == AMEND:
        if "round" not in data:
            raise RoundRejected(BAD_CORRECTION, "an amend carries the amended round", "round")
        try:
            amended = parse_round(data["round"], limits=limits)
        except RoundRejected as rejection:
            if rejection.reason != NO_OUTCOME or rejection.round is None:
                raise RoundRejected(rejection.reason, rejection.message,
                                    "round" + (f".{rejection.field}" if rejection.field else "")) from None
            amended = rejection.round  # an outcome-free amendment: the round then rates nobody
    elif "round" in data:
        raise RoundRejected(BAD_CORRECTION, f"a{'n' if kind == INSERT else ''} {kind} carries no round", "round")
    ladder = data.get("ladder", amended.ladder if amended is not None else DEFAULT_LADDER)
    round_id = data.get("round_id", amended.round_id if amended is not None else None)
    if round_id is None:
        raise RoundRejected(BAD_CORRECTION, f"a{'n' if kind == INSERT else ''} {kind} names its round (round_id)",
                            "round_id")
    if not LADDER_PATTERN.match(ladder):
        raise RoundRejected(BAD_CORRECTION, f"ladder name {ladder!r} must match {LADDER_PATTERN.pattern}", "ladder")
    if amended is not None and (amended.round_id, amended.ladder) != (round_id, ladder):
        raise RoundRejected(BAD_CORRECTION, f"the amended round is {amended.round_id!r} of ladder {amended.ladder!r}, "
                            f"the correction names {round_id!r} of ladder {ladder!r}", "round.round_id")
    correction = Correction(kind, ladder, round_id, data.get("correction_id", ""), data.get("reason", ""), amended)
    if not correction.correction_id:
        correction = Correction(kind, ladder, round_id, "auto-" + correction.content_hash()[:24], correction.reason,
                                amended)
    return correction
