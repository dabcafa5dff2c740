"""The reference the bulk encoders (stream/contracts/encoding.py) are held to: ``json.dumps`` of the
message's ``to_dict()``, compact, ``ensure_ascii=False``, NaN and infinities refused."""

from __future__ import annotations

import json
from typing import Any, Protocol


class _Message(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


def reference_json(message: _Message) -> bytes:
    """What the message's JSON must be, byte for byte."""
    return json.dumps(message.to_dict(), separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
