"""Which partition Kafka's default partitioner puts a key on (murmur2, as the Java client).

Phase one sends each fan-out message to an explicit partition: the one the default
partitioner would choose for each of its players' ids, so a player's updates always land on
the same partition (and so the same phase-two consumer) whoever produced them.
"""

from __future__ import annotations

from collections.abc import Sequence

from kafka.partitioner.default import murmur2

POSITIVE_MASK = 0x7FFFFFFF
CACHED_KEYS = 1 << 20
"""Player ids whose partitions are memoised (murmur2 in Python costs ~6 µs a key; players recur)."""

_KNOWN: dict[int, dict[str, int]] = {}
"""Per partition count, the partition of each key seen (cleared past CACHED_KEYS)."""


def partition_for(key: str, partitions: int) -> int:
    """The partition Kafka's default partitioner puts ``key`` on (memoised)."""
    known = _KNOWN.get(partitions)
    partition = None if known is None else known.get(key)
    return partitions_of((key,), partitions)[0] if partition is None else partition


def partitions_of(keys: Sequence[str], partitions: int) -> list[int]:
    """``[partition_for(k, partitions) for k in keys]`` in one ``map`` over the memo (a batch's players
    are mostly known); an unknown key is hashed and remembered."""
    known = _KNOWN.setdefault(partitions, {})
    out: list[int | None] = list(map(known.get, keys))
    if None in out:
        if len(known) > CACHED_KEYS:
            known.clear()
        for i, key in enumerate(keys):
            if out[i] is None:
                # toPositive(murmur2(key)) % partitions, the Java client's default for a keyed record
                out[i] = known[key] = (murmur2(key.encode("utf-8")) & POSITIVE_MASK) % partitions
    return out  # type: ignore[return-value]  # every None replaced

