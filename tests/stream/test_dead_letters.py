"""Bad input never blocks the stream: it goes to rounds-dlq with its reason, and rating goes on.

One worker; a conflicting round_id (first stands), undecodable and invalid messages, an
outcome-free round (recorded, nobody rated), and good rounds after all of them.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import redis

import pipeline_harness as harness
from stream import engine
from stream.contracts import validate
from stream.store import keys

pytestmark = pytest.mark.integration


def test_rejections_go_to_the_dlq_and_the_stream_goes_on(local_stack, stack_redis_url: str, fresh_prefix: str,
                                                         tmp_path: Path) -> None:
    good = harness.synthetic_rounds(seed=3, count=12, ladders=("main",), pool=8, max_size=6)
    conflicting = json.loads(json.dumps(good[2]))
    conflicting["standings"].reverse()
    for rank, entry in enumerate(conflicting["standings"], start=1):
        entry["rank"] = rank
    tied = {"round_id": "all-tied", "ladder": "main", "occurred_at": harness.BASE_TIME,
            "standings": [{"player": "p000", "rank": 1}, {"player": "p001", "rank": 1}]}
    bad = [b"\xff\xfe not utf-8", b"{not json", json.dumps({"round_id": "x", "ladder": "main"}).encode()]
    stream_ = good[:5] + [conflicting, bad[0], tied] + good[5:8] + [bad[1], bad[2]] + good[8:]

    worker = harness.Worker(harness.worker_env(local_stack.bootstrap, stack_redis_url, fresh_prefix),
                            tmp_path / "worker.log").start()
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", stream_, key="main")
        harness.wait_drained(stack_redis_url, harness.expected_rounds(good + [tied]), [worker])
        letters = harness.consume_all(local_stack.bootstrap, f"{fresh_prefix}rounds-dlq", at_least=4)
    finally:
        worker.stop()

    harness.assert_equals_reference(stack_redis_url, harness.reference(good, engine.preset("mmr")))
    for _, value in letters:
        validate("dead-letter", value)
    decoded = [json.loads(v) for _, v in letters]
    assert sorted(d["reason"] for d in decoded) == sorted(["conflict", "not_utf8", "not_json", "schema"])
    conflict = next(d for d in decoded if d["reason"] == "conflict")
    assert json.loads(base64.b64decode(conflict["original"])) == conflicting
    assert conflict["topic"] == f"{fresh_prefix}rounds" and conflict["offset"] == 5
    assert next(d for d in decoded if d["reason"] == "not_utf8")["original"] == base64.b64encode(bad[0]).decode()

    client = redis.Redis.from_url(stack_redis_url)
    record = client.hgetall(keys.round_record("main", "all-tied"))
    assert record[b"status"] == b"no_outcome"
    first = client.hget(keys.round_record("main", good[2]["round_id"]), "content_hash")
    assert client.hget(keys.round_record("main", good[2]["round_id"]), "status") == b"rated" and first
    client.close()
