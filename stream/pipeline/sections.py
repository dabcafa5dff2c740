"""Several PlayerUpdate sections in one ``player-updates`` message (DESIGN15 wire format).

A message value is one or more sections joined by ``b"\\n"``; a section is one PlayerUpdate
JSON document (compact JSON never holds a raw newline), so a one-section message is exactly
the message of before. Phase one joins a batch's sections per partition (in seq order per
ladder) into as few messages as fit the value limit; phase two splits them again.
"""

from __future__ import annotations

from collections.abc import Sequence

from stream.pipeline.messages import FanOutMessage

SEPARATOR = b"\n"


def join_sections(sections: Sequence[FanOutMessage], limit: int) -> list[FanOutMessage]:
    """Sections of several rounds as few messages per partition as fit ``limit`` bytes, each
    section whole (a section over the limit alone is its own message), in the given order per
    partition; a message's key is its first section's key. Partitions in first-seen order."""
    parts: dict[int, list[list[FanOutMessage]]] = {}
    sizes: dict[int, int] = {}
    for section in sections:
        groups = parts.setdefault(section.partition, [])
        size = sizes.get(section.partition, 0)
        if groups and size + len(SEPARATOR) + len(section.value) <= limit:
            groups[-1].append(section)
            sizes[section.partition] = size + len(SEPARATOR) + len(section.value)
        else:
            groups.append([section])
            sizes[section.partition] = len(section.value)
    return [FanOutMessage(partition, group[0].key, SEPARATOR.join(s.value for s in group))
            for partition, groups in parts.items() for group in groups]


def split_sections(value: bytes) -> list[bytes]:
    """The sections of a ``player-updates`` message value (one for a one-section message)."""
    return value.split(SEPARATOR)
