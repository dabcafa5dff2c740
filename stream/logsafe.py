"""Untrusted text (ids, messages quoting them) made safe for a log line, so an id cannot forge or hide log lines:
non-printable characters (controls, bidi overrides, line separators, lone surrogates), ``\\`` and ``"`` escaped.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable

LOG_TEXT_LIMIT = 200
"""Characters of one value kept in a log line (ids are at most MAX_ID_LENGTH long when valid)."""
EXCEPTION_TEXT_LIMIT = 2000
"""Characters of an exception's message kept in a logged traceback."""


def _escape_char(char: str) -> str:
    if char in '\\"':
        return "\\" + char
    if char.isprintable():
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def log_safe(value: object, *, quote: bool = True, limit: int = LOG_TEXT_LIMIT) -> str:
    """``value`` (an id, or ``quote=False`` for a free-text message) as one printable log token."""
    text = value if isinstance(value, str) else str(value)
    extra = len(text) - limit
    if extra > 0:
        text = text[:limit]
    if not text.isprintable() or "\\" in text or '"' in text:
        text = "".join(_escape_char(char) for char in text)
    if extra > 0:
        text += f"...(+{extra} chars)"
    return f'"{text}"' if quote else text


def log_traceback(exc: BaseException) -> str:
    """The traceback of ``exc`` and the exceptions it was raised from, with each exception's
    message through :func:`log_safe` (a message may quote an id; the frames are our code)."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append("Traceback (most recent call last):\n" + "".join(traceback.format_tb(current.__traceback__))
                     + f"{type(current).__name__}: {log_safe(current, quote=False, limit=EXCEPTION_TEXT_LIMIT)}")
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return "\n\nwhich was raised while handling / from:\n".join(parts)


def log_ids(values: Iterable[object], *, limit: int = 5) -> str:
    """The first ``limit`` ids of a collection for a log line, each through :func:`log_safe`."""
    items = list(values)
    shown = ", ".join(log_safe(item) for item in items[:limit])
    return f"[{shown}{', ...' if len(items) > limit else ''}]"
