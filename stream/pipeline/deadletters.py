"""Reading ``rounds-dlq`` back: each dead letter as a :class:`Rejection` (for ``stream rejected``,
``stream publish --wait`` and the read API's rejected view). Records are read defensively (a cut
original, missing or mistyped fields, new reason codes shown as written); one that is not JSON at
all is listed with reason ``unreadable``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from stream.connections import kafka_python_config
from stream.pipeline.topics import ROUNDS_DLQ
from stream.settings import Settings

#: Reason shown for a record of the dead-letter topic that is not a DeadLetter document.
UNREADABLE = "unreadable"
#: Records read back per partition when looking for the most recent ones of one ladder.
LADDER_SCAN = 5_000
#: Milliseconds one poll waits; reading stops after an empty poll once the end offsets are reached
#: (the embedded broker reports an end below the last batch's records, so one more poll follows).
POLL_MS = 200
#: Seconds reading the recent dead letters may take.
DRAIN_TIMEOUT_S = 20.0
#: Seconds a Kafka client waits for the broker before the read fails.
CONNECT_TIMEOUT_S = 5.0
_ROUND_ID = re.compile(rb'"round_id"\s*:\s*("(?:[^"\\]|\\.)*")')
_LADDER = re.compile(rb'"ladder"\s*:\s*("(?:[^"\\]|\\.)*")')


@dataclass
class Rejection:
    """One dead letter: why (reason, field, message), when, which round, and where each copy sits."""

    reason: str
    message: str
    field: str | None
    rejected_at: float | None
    ladder: str | None
    round_id: str | None
    topic: str | None  # where the original was read (rounds, or player-updates)
    partition: int | None
    offset: int | None
    original_bytes: int | None  # the original's length (a cut dead letter states it)
    truncated: bool
    dlq_partition: int
    dlq_offset: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _json_string(pattern: re.Pattern[bytes], text: bytes) -> str | None:
    match = pattern.search(text)
    if match is None:
        return None
    try:
        found = json.loads(match.group(1))
    except (ValueError, UnicodeDecodeError):
        return None
    return found if isinstance(found, str) else None


def _original(data: dict[str, Any]) -> tuple[bytes, int | None, bool]:
    """(the original's bytes as far as kept, its full length, whether it was cut)."""
    try:
        kept = base64.b64decode(data.get("original") or "", validate=False)
    except (binascii.Error, ValueError, TypeError):
        kept = b""
    length = next((n for name in ("original_length", "original_bytes", "original_size", "length")
                   if (n := _int(data.get(name))) is not None), None)
    truncated = bool(data.get("truncated")) or (length is not None and length > len(kept))
    return kept, length if length is not None else len(kept), truncated


def parse_record(key: bytes | None, value: bytes | None, dlq_partition: int, dlq_offset: int) -> Rejection:
    """A dead-letter record as a :class:`Rejection` (never raises)."""
    try:
        data = json.loads(value or b"")
    except (ValueError, UnicodeDecodeError):
        data = None
    key_text = key.decode("utf-8", "replace") if key else None
    if not isinstance(data, dict):
        return Rejection(UNREADABLE, "the dead-letter record is not a JSON object", None, None, key_text, None,
                         None, None, None, len(value or b""), False, dlq_partition, dlq_offset)
    kept, length, truncated = _original(data)
    round_id = ladder = None
    parsed: object = None
    if not truncated:
        try:
            parsed = json.loads(kept)
        except (ValueError, UnicodeDecodeError):
            parsed = None
    if isinstance(parsed, dict):
        round_id, ladder = _str(parsed.get("round_id")), _str(parsed.get("ladder"))
    else:  # a cut or broken original: look for the ids in what is there
        round_id, ladder = _json_string(_ROUND_ID, kept), _json_string(_LADDER, kept)
    return Rejection(reason=_str(data.get("reason")) or UNREADABLE, message=_str(data.get("message")) or "",
                     field=_str(data.get("field")), rejected_at=_number(data.get("rejected_at")),
                     ladder=key_text or ladder, round_id=round_id, topic=_str(data.get("topic")),
                     partition=_int(data.get("partition")), offset=_int(data.get("offset")),
                     original_bytes=length, truncated=truncated, dlq_partition=dlq_partition, dlq_offset=dlq_offset)


class TopicReader:
    """A group-less kafka-python consumer assigned every partition of ``topics`` (by default
    ``rounds-dlq``): starts at once, leaves nothing behind; a context manager."""

    def __init__(self, settings: Settings, topics: Sequence[str] = (ROUNDS_DLQ,)) -> None:
        from kafka import KafkaConsumer

        self.names = {settings.topic(topic): topic for topic in topics}  # full name -> name before the prefix
        timeout_ms = int(CONNECT_TIMEOUT_S * 1000)
        self._consumer = KafkaConsumer(group_id=None, enable_auto_commit=False, allow_auto_create_topics=False,
                                       bootstrap_timeout_ms=timeout_ms, **kafka_python_config(settings))
        self._partitions: list[Any] = []

    def __enter__(self) -> "TopicReader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._consumer.close()

    def assign(self) -> bool:
        """Assign every partition of the topics; False while none exists."""
        from kafka import TopicPartition

        if self._partitions:
            return True
        self._consumer.topics()  # refresh metadata
        self._partitions = [TopicPartition(t, p) for t in self.names
                            for p in sorted(self._consumer.partitions_for_topic(t) or ())]
        self._consumer.assign(self._partitions)
        return bool(self._partitions)

    def wait(self, deadline: float | None) -> bool:
        """:meth:`assign` once the topics exist; False if ``deadline`` (monotonic) passes first."""
        while not self.assign():
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(POLL_MS / 1000)
        return True

    def end_offsets(self) -> dict[Any, int]:
        """Partition → end offset now (empty while the topics do not exist)."""
        if not self.assign():
            return {}
        return {tp: int(n) for tp, n in self._consumer.end_offsets(self._partitions).items()}

    def seek(self, offsets: dict[Any, int] | None = None, *, back: int | None = None) -> None:
        """Position every partition: at ``offsets`` (missing partitions: the beginning), or ``back``
        records before the end, or (neither) at the end."""
        ends = self.end_offsets()
        begins = {tp: int(n) for tp, n in self._consumer.beginning_offsets(self._partitions).items()}
        for tp in self._partitions:
            if offsets is not None:
                target = offsets.get(tp, begins[tp])
            elif back is not None:
                target = max(begins[tp], ends[tp] - back)
            else:
                target = ends[tp]
            self._consumer.seek(tp, target)

    def records(self, timeout_ms: int = POLL_MS) -> list[Any]:
        """The records fetched by one poll, in partition/offset order."""
        return [r for records in self._consumer.poll(timeout_ms=timeout_ms).values() for r in records]

    def poll(self, timeout_ms: int = POLL_MS) -> list[Rejection]:
        """:meth:`records` as dead letters."""
        return [parse_record(r.key, r.value, r.partition, r.offset) for r in self.records(timeout_ms)]

    def drain(self, timeout_s: float = DRAIN_TIMEOUT_S) -> list[Rejection]:
        """Everything from the current positions to the end (the end as of now, plus one empty poll);
        TimeoutError if the broker stops answering before."""
        ends = self.end_offsets()
        out: list[Rejection] = []
        deadline = time.monotonic() + timeout_s
        while True:
            batch = self.poll()
            out += batch
            at_end = all(self._consumer.position(tp) >= ends.get(tp, 0) for tp in self._partitions)
            if not batch and at_end:
                return out
            if time.monotonic() > deadline:
                raise TimeoutError(f"{', '.join(self.names)} not read to its end within {timeout_s:.0f} s")


def _backlog(reader: TopicReader, limit: int, ladder: str | None) -> list[Rejection]:
    """The ``limit`` most recent dead letters (of ``ladder`` if given) up to now, newest first."""
    reader.seek(back=limit if ladder is None else max(limit, LADDER_SCAN))  # records read back per partition
    found = [r for r in reader.drain() if ladder is None or r.ladder == ladder]
    return sorted(found, key=lambda r: (r.rejected_at or 0.0, r.dlq_partition, r.dlq_offset), reverse=True)[:limit]


def recent(settings: Settings, *, limit: int, ladder: str | None = None) -> list[Rejection]:
    """The ``limit`` most recent dead letters (of ``ladder`` if given), newest first."""
    with TopicReader(settings) as reader:
        if not reader.assign():
            return []
        return _backlog(reader, limit, ladder)


def follow(settings: Settings, *, ladder: str | None = None, deadline: float | None = None,
           last: int = 0) -> Iterator[Rejection]:
    """The ``last`` most recent dead letters (oldest of them first), then each new one as it arrives,
    until ``deadline`` (monotonic); one reader throughout, so none falls between the two."""
    with TopicReader(settings) as reader:
        if not reader.wait(deadline):
            return
        yield from reversed(_backlog(reader, last, ladder))
        while deadline is None or time.monotonic() < deadline:
            for rejection in reader.poll():
                if ladder is None or rejection.ladder == ladder:
                    yield rejection
