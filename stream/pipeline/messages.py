"""Outgoing Kafka messages as plain values, so handlers stay testable without a broker."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from stream.contracts.encoding import join_entries
from stream.pipeline.partitioner import partitions_of


@dataclass(slots=True)
class FanOutMessage:
    """One PlayerUpdate for ``player-updates``: explicit partition, key = first entry's player.
    Not frozen: one is built per round and partition (a frozen ``__init__`` costs a setattr per field)."""

    partition: int
    key: bytes
    value: bytes


@dataclass(slots=True)
class RatingChangeMessage:
    """One RatingChange for ``rating-changes``: key = player. Not frozen: phase two builds one
    per applied row (as :class:`FanOutMessage`)."""

    key: bytes
    value: bytes


RECORD_OVERHEAD_BYTES = 64 * 1024
"""Room left under MAX_MESSAGE_BYTES for a record's key, headers and framing."""


def value_limit(max_message_bytes: int) -> int:
    """Largest value the worker produces (a fan-out part, a dead letter): MAX_MESSAGE_BYTES less
    room for the record around it (a quarter of it when MAX_MESSAGE_BYTES is small)."""
    return max(1, max_message_bytes - min(RECORD_OVERHEAD_BYTES, max_message_bytes // 4))


SECTION_SEPARATOR = b"\n"
"""Joins the sections of a ``player-updates`` message: each section is one PlayerUpdate JSON
document (compact JSON never holds a raw newline), so a one-section message is exactly the
document."""


def split_sections(value: bytes) -> list[bytes]:
    """The sections of a ``player-updates`` message value, in order."""
    return value.split(SECTION_SEPARATOR)


def join_sections(sections: Sequence[bytes], limit: int) -> list[bytes]:
    """The sections, in order, concatenated into as few message values of at most ``limit`` bytes
    as fit (``limit``: :func:`value_limit` of MAX_MESSAGE_BYTES); a section is never split (one
    larger than ``limit`` goes alone: phase one splits a round's players into parts before)."""
    out: list[bytes] = []
    current: list[bytes] = []
    size = 0
    for section in sections:
        added = len(section) + (len(SECTION_SEPARATOR) if current else 0)
        if current and size + added > limit:
            out.append(SECTION_SEPARATOR.join(current))
            current, size, added = [], 0, len(section)
        current.append(section)
        size += added
    if current:
        out.append(SECTION_SEPARATOR.join(current))
    return out


def join_fanout(messages: Sequence[FanOutMessage], limit: int) -> list[FanOutMessage]:
    """One-section fan-out messages joined per partition (ascending) into as few as fit ``limit``
    (:func:`join_sections`), each keyed by its first section's key."""
    by_partition: dict[int, list[FanOutMessage]] = {}
    for message in messages:
        by_partition.setdefault(message.partition, []).append(message)
    out: list[FanOutMessage] = []
    for partition, group in sorted(by_partition.items()):
        first = 0
        for value in join_sections([m.value for m in group], limit):
            out.append(FanOutMessage(partition, group[first].key, value))
            first += value.count(SECTION_SEPARATOR) + 1
    return out


def partition_messages(heads: Sequence[str], entries: Sequence[str], flat: Sequence[str], bounds: Sequence[int],
                    partitions: int, limit: int) -> list[list[FanOutMessage]]:
    """Each round's fan-out messages (round k: its ``update_head`` ``heads[k]``, its entries' texts
    and players ``bounds[k]:bounds[k + 1]`` of ``entries`` and ``flat``): per partition, ascending,
    split in halves while over ``limit``, keyed by the first player (phase one and the re-rate)."""
    out: list[list[FanOutMessage]] = []
    partition_of = partitions_of(flat, partitions)
    for head, a, b in zip(heads, bounds[:-1], bounds[1:]):
        groups: dict[int, list[int]] = {}
        for i in range(a, b):
            group = groups.get(partition_of[i])
            if group is None:
                groups[partition_of[i]] = [i]
            else:
                group.append(i)
        messages: list[FanOutMessage] = []
        for partition in sorted(groups):
            _split(messages, partition, head, entries, flat, groups[partition], limit)
        out.append(messages)
    return out


def _split(out: list[FanOutMessage], partition: int, head: str, entries: Sequence[str], flat: Sequence[str],
           index: list[int], limit: int) -> None:
    """Append the message of the entries ``index`` of one partition, in halves (rare) while over ``limit``."""
    value = join_entries(head, [entries[i] for i in index])  # = PlayerUpdate(...).to_json().encode() (tested)
    if len(value) <= limit or len(index) == 1:
        out.append(FanOutMessage(partition, flat[index[0]].encode(), value))
        return
    half = len(index) // 2
    _split(out, partition, head, entries, flat, index[:half], limit)
    _split(out, partition, head, entries, flat, index[half:], limit)


@dataclass(frozen=True)
class Origin:
    """Where an input message came from (copied into a dead letter)."""

    topic: str | None = None
    partition: int | None = None
    offset: int | None = None


@dataclass(frozen=True)
class Incoming:
    """An input message as plain values (the agents build it from a Faust event), so the
    handlers and their fallbacks run without Faust."""

    value: bytes
    key: bytes | None = None
    origin: Origin = Origin()
    timestamp: float | None = None


FORWARDED = "forwarded"
"""Phase one's outcome for a round read under another key than its ladder (:func:`misrouted`)."""


def misrouted(event: Incoming, ladder: str) -> bool:
    """Whether a round read from a partition was published under another key than its ladder: a
    ladder's rounds are rated in order on the one partition its key picks, so it is forwarded there."""
    return event.origin.topic is not None and event.origin.partition is not None and event.key != ladder.encode()
