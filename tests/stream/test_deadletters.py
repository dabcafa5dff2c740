"""Dead letters read back defensively (stream/pipeline/deadletters.py): the current format, a cut
original (prefix + length + hash), missing or mistyped fields, unknown reasons, and garbage."""

from __future__ import annotations

import base64
import hashlib
import json

from stream.contracts import DeadLetter, RoundRejected
from stream.pipeline.deadletters import UNREADABLE, parse_record

ROUND = {"round_id": "r/1", "ladder": "cup", "occurred_at": 1.0, "standings": ["a", "b"]}


def test_a_dead_letter_of_today_s_format() -> None:
    original = json.dumps(ROUND).encode()
    letter = DeadLetter.from_rejection(RoundRejected("conflict", "used before", "round_id"), original,
                                       rejected_at=12.5, topic="rounds", partition=2, offset=40)
    x = parse_record(b"cup", letter.to_json().encode(), 1, 7)
    assert (x.reason, x.field, x.message, x.rejected_at) == ("conflict", "round_id", "used before", 12.5)
    assert (x.ladder, x.round_id, x.topic, x.partition, x.offset) == ("cup", "r/1", "rounds", 2, 40)
    assert (x.original_bytes, x.truncated, x.dlq_partition, x.dlq_offset) == (len(original), False, 1, 7)


def test_a_cut_original_still_names_its_round() -> None:
    big = json.dumps({**ROUND, "standings": [f"p{i}" for i in range(10_000)]}).encode()
    prefix = big[:200]
    record = {"reason": "internal_error", "message": "OverflowError", "field": None,
              "original": base64.b64encode(prefix).decode(), "original_length": len(big),
              "original_sha256": hashlib.sha256(big).hexdigest(), "rejected_at": 3.0,
              "topic": "rounds", "partition": 0, "offset": 9}
    x = parse_record(None, json.dumps(record).encode(), 0, 0)
    assert x.reason == "internal_error"  # a reason code this reader has never heard of
    assert (x.truncated, x.original_bytes, x.round_id, x.ladder) == (True, len(big), "r/1", "cup")


def test_missing_mistyped_and_garbage_fields() -> None:
    x = parse_record(b"cup", json.dumps({"reason": 5, "original": "%%%", "partition": "two",
                                         "rejected_at": True}).encode(), 3, 4)
    assert (x.reason, x.message, x.partition, x.rejected_at, x.round_id, x.ladder) == (UNREADABLE, "", None, None, None, "cup")
    for junk in (b"", b"\xff\xfe", b"[1, 2]", b"null", None):
        y = parse_record(None, junk, 0, 1)
        assert y.reason == UNREADABLE and y.dlq_offset == 1
