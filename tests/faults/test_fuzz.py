"""Bad input fuzz: thousands of hypothesis-generated messages, malformed and valid, through ONE
live pipeline (real broker, real redis-server, one worker).

Each generated message carries the outcome it must have (its kind): every generator breaks a
valid round in exactly one way. While generating, ``parse_round`` must agree (a property test
of the contract); then everything is published and the worker must agree too: every valid
round rated (Redis equals replay of the valid rounds), every invalid message on the DLQ with
its reason (matched by partition and offset), outcome-free rounds recorded as ``no_outcome``,
exact re-publications ignored, and the worker still alive.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import pipeline_harness as harness
from stream import engine
from stream.contracts import Limits, RoundRejected, parse_round, validate
from stream.pipeline.topics import ensure
from stream.settings import Settings
from stream.store import keys

pytestmark = pytest.mark.integration

MESSAGES = 1500
MAX_ROUND_SIZE = 10
MAX_ID_LENGTH = 128
LADDERS = ("f1", "f2", "f3")
PLAYERS = [f"p{i:02d}" for i in range(40)]
LIMITS = Limits(max_round_size=MAX_ROUND_SIZE, max_message_bytes=64 * 1024 * 1024, max_id_length=MAX_ID_LENGTH,
                strict=False)
VALID, NO_OUTCOME, DUPLICATE = "valid", "no_outcome", "duplicate"
KINDS = ["valid"] * 6 + ["not_json", "not_utf8", "schema", "no_outcome", "duplicate_player", "bad_rank", "bad_weight",
                         "id_too_long", "round_too_large", "bad_ladder", "conflict", "duplicate"]
"""What a generated message is (valid rounds weighted up: the stream must rate plenty of them)."""


@dataclass(frozen=True)
class Message:
    """A generated message: raw bytes, Kafka key, the outcome it must have, its round if it parses."""

    raw: bytes
    key: str
    expect: str
    round: dict | None = None


def _round(data: st.DataObject, serial: int, size: st.SearchStrategy[int] = st.integers(2, 8)) -> dict:
    n = data.draw(size)
    players = data.draw(st.permutations(PLAYERS))[:n]
    ranks = sorted(data.draw(st.lists(st.integers(1, n), min_size=n, max_size=n)))
    if n >= 2 and len(set(ranks)) == 1:
        ranks[-1] += 1
    return {"round_id": f"r{serial:05d}", "ladder": data.draw(st.sampled_from(LADDERS)),
            "occurred_at": harness.BASE_TIME + serial * 600.0,
            "standings": [{"player": p, "rank": r} for p, r in zip(players, ranks)]}


def _dumps(d: dict) -> bytes:
    return json.dumps(d).encode()


def draw_message(data: st.DataObject, serial: int, valid: list[dict]) -> Message:
    """One message of a drawn kind, built from a fresh valid round broken in one way."""
    kind = data.draw(st.sampled_from(KINDS))
    if kind in ("conflict", "duplicate") and not valid:  # nothing to re-use yet
        kind = "valid"
    r = _round(data, serial)
    standings = r["standings"]
    if kind == "valid":
        return Message(_dumps(r), r["ladder"], VALID, r)
    if kind == "not_json":
        text = data.draw(st.text(max_size=40))
        return Message(b"{" + text.encode() + b",", r["ladder"], "not_json")
    if kind == "not_utf8":
        return Message(b"\xff" + data.draw(st.binary(max_size=40)), r["ladder"], "not_utf8")
    if kind == "schema":
        how = data.draw(st.sampled_from(["missing", "mistyped", "not_object", "empty_player"]))
        if how == "missing":
            del r[data.draw(st.sampled_from(["round_id", "standings", "occurred_at"]))]
        elif how == "mistyped":
            field = data.draw(st.sampled_from(["round_id", "standings", "occurred_at"]))
            r[field] = data.draw(st.sampled_from([123, "not a list" if field == "standings" else None, [1], True]))
            if field != "standings" and r[field] == "not a list":
                r[field] = 7
            if field == "occurred_at":
                r[field] = data.draw(st.sampled_from(["yesterday", None, [1], True]))
        elif how == "not_object":
            return Message(_dumps(data.draw(st.sampled_from([[1, 2], 3, "round", None]))), r["ladder"], "schema")
        else:
            standings[0]["player"] = ""
        return Message(_dumps(r), r["ladder"], "schema")
    if kind == "no_outcome":
        how = data.draw(st.sampled_from(["empty", "single", "tied"]))
        r["standings"] = [] if how == "empty" else standings[:1] if how == "single" else [
            {"player": s["player"], "rank": 1} for s in standings]
        return Message(_dumps(r), r["ladder"], NO_OUTCOME, r)
    if kind == "duplicate_player":
        standings[-1]["player"] = standings[0]["player"]
        return Message(_dumps(r), r["ladder"], "duplicate_player")
    if kind == "bad_rank":
        standings[data.draw(st.integers(0, len(standings) - 1))]["rank"] = data.draw(
            st.sampled_from([0, -1, -1000, 1.5, "1", None]))
        return Message(_dumps(r), r["ladder"], "bad_rank")
    if kind == "bad_weight":
        raw = _dumps(r)[:-1] + b', "weight": ' + data.draw(
            st.sampled_from([b"0", b"-1", b"-0.5", b"NaN", b"Infinity", b"-Infinity", b'"1"', b"1e400"])) + b"}"
        return Message(raw, r["ladder"], "bad_weight")
    if kind == "id_too_long":
        long_id = "x" * data.draw(st.integers(MAX_ID_LENGTH + 1, 4 * MAX_ID_LENGTH))
        if data.draw(st.booleans()):
            r["round_id"] = long_id
        else:
            standings[0]["player"] = long_id
        return Message(_dumps(r), r["ladder"], "id_too_long")
    if kind == "round_too_large":
        n = data.draw(st.integers(MAX_ROUND_SIZE + 1, 3 * MAX_ROUND_SIZE))
        r["standings"] = [{"player": p, "rank": i + 1} for i, p in enumerate(PLAYERS[:n])]
        return Message(_dumps(r), r["ladder"], "round_too_large")
    if kind == "bad_ladder":
        r["ladder"] = data.draw(st.sampled_from(["", "bad ladder", "-x", "a/b", "é", "x" * 65, "{tag}"]))
        return Message(_dumps(r), "fuzz-bad", "bad_ladder")
    original = valid[data.draw(st.integers(0, 2**31)) % len(valid)]  # strategy independent of len(valid)
    if kind == "duplicate":
        return Message(_dumps(original), original["ladder"], DUPLICATE)
    changed = json.loads(json.dumps(original))  # conflict: same ladder and id, other content
    changed["occurred_at"] += 1.0
    return Message(_dumps(changed), changed["ladder"], "conflict")


def generate(count: int) -> list[Message]:
    """``count`` messages, deterministic (derandomized hypothesis); checks parse_round agrees."""
    out: list[Message] = []
    valid: list[dict] = []

    @settings(max_examples=count, derandomize=True, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def one(data: st.DataObject) -> None:
        message = draw_message(data, len(out), valid)
        try:
            parsed = parse_round(message.raw, limits=LIMITS)
            outcome = NO_OUTCOME if parsed.is_outcome_free() else VALID
        except RoundRejected as rejection:
            outcome = rejection.reason
        wanted = VALID if message.expect in (DUPLICATE, "conflict") else message.expect
        assert outcome == wanted, (message, outcome)
        out.append(message)
        if message.expect == VALID:
            valid.append(message.round)

    one()
    return out


def publish_with_offsets(bootstrap: str, topic: str, messages: list[Message]) -> list[tuple[int, int]]:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    try:
        futures = [producer.send(topic, key=m.key.encode(), value=m.raw) for m in messages]
        producer.flush()
        return [(f.get(timeout=30).partition, f.get(timeout=30).offset) for f in futures]
    finally:
        producer.close()


def test_fuzzed_rounds_through_one_live_pipeline(local_stack, stack_redis_url: str, fresh_prefix: str,
                                                 tmp_path: Path) -> None:
    messages = generate(MESSAGES)
    kinds = Counter(m.expect for m in messages)
    assert len(kinds) == len(set(KINDS)) and kinds[VALID] >= MESSAGES // 4, kinds  # every kind, plenty of valid rounds
    valid = [m.round for m in messages if m.expect == VALID]
    recorded = [m.round for m in messages if m.expect == NO_OUTCOME]
    rejected = {i: m.expect for i, m in enumerate(messages) if m.expect not in (VALID, NO_OUTCOME, DUPLICATE)}

    env = harness.worker_env(local_stack.bootstrap, stack_redis_url, fresh_prefix,
                             MAX_ROUND_SIZE=str(MAX_ROUND_SIZE), MAX_ID_LENGTH=str(MAX_ID_LENGTH))
    ensure(Settings.from_env(env))
    worker = harness.Worker(env, tmp_path / "worker.log").start()
    try:
        offsets = publish_with_offsets(local_stack.bootstrap, f"{fresh_prefix}rounds", messages)
        harness.wait_drained(stack_redis_url, harness.expected_rounds(valid + recorded), [worker])
        letters = harness.consume_all(local_stack.bootstrap, f"{fresh_prefix}rounds-dlq", at_least=len(rejected))
        assert worker.process is not None and worker.process.poll() is None, "the worker died"
    finally:
        worker.stop()

    harness.assert_equals_reference(stack_redis_url, harness.reference(valid, engine.preset("mmr")))
    by_origin: dict[tuple[int, int], str] = {}
    for _, value in letters:
        validate("dead-letter", value)
        letter = json.loads(value)
        origin = (letter["partition"], letter["offset"])
        assert by_origin.setdefault(origin, letter["reason"]) == letter["reason"]
        i = offsets.index(origin)
        assert base64.b64decode(letter["original"]) == messages[i].raw
    assert by_origin == {offsets[i]: reason for i, reason in rejected.items()}

    client = redis.Redis.from_url(stack_redis_url)
    try:
        for r in recorded:
            assert client.hget(keys.round_record(r["ladder"], r["round_id"]), "status") == b"no_outcome"
        for r in valid:  # a conflicting re-use never replaced the first round
            assert client.hget(keys.round_record(r["ladder"], r["round_id"]), "status") == b"rated"
    finally:
        client.close()
