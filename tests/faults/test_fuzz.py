"""Bad input fuzz: thousands of hypothesis-generated messages, malformed and valid, through ONE
live pipeline (real broker, real redis-server, one worker).

Each generated message carries the outcome it must have (its kind): every generator breaks a
valid round in exactly one way, or pushes a valid one to an edge (numbers at every extreme and
in every field, unicode ids, ids and rounds at their size limits, nested unknown fields, a
message just under MAX_MESSAGE_BYTES). While generating, ``parse_round`` must agree (a property
test of the contract); then everything is published and the worker must agree too: every valid
round rated, even those published right behind a message that used to stall the partition
(Redis equals ``stream replay`` of the same messages: the stream's acceptance and dedup, then
the engine), every invalid message on the DLQ with its reason (matched by partition and offset,
cut to fit MAX_MESSAGE_BYTES), outcome-free rounds recorded as ``no_outcome``, exact
re-publications ignored, and the worker still alive.
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
from stream.contracts.round import MAX_NESTING
from stream.pipeline.topics import ensure
from stream.settings import Settings
from stream.store import keys

pytestmark = pytest.mark.integration

MESSAGES = 1500
MAX_ROUND_SIZE = 10
MAX_ID_LENGTH = 128
MAX_MESSAGE_BYTES = 64 * 1024
LADDERS = ("f1", "f2", "f3")
PLAYERS = [f"p{i:02d}" for i in range(40)]
ODD_PLAYERS = ["ü", "😀", "a\u0301", "\u202eevil", "\u0000nul", "名前", "é" * MAX_ID_LENGTH, "{tag}", "a|b", "}",
               "\ufeffbom", "\U0010ffff", "\\", "\"q\"", " ", "\n", "x" * MAX_ID_LENGTH]
"""Unicode edge cases as player ids (they recur, so they are rated more than once)."""
LIMITS = Limits(max_round_size=MAX_ROUND_SIZE, max_message_bytes=MAX_MESSAGE_BYTES, max_id_length=MAX_ID_LENGTH,
                strict=False)
MAX_RANK = 2**53 - 1
VALID, NO_OUTCOME, DUPLICATE = "valid", "no_outcome", "duplicate"
EDGE_KINDS = ["extreme", "unicode", "nested", "large"]
"""Valid rounds at an edge: each must be rated like any other."""
KINDS = ["valid"] * 6 + EDGE_KINDS + [
    "not_json", "not_utf8", "schema", "no_outcome", "duplicate_player", "bad_rank", "bad_weight", "bad_number",
    "bad_number", "id_too_long", "round_too_large", "message_too_large", "bad_ladder", "conflict", "duplicate"]
"""What a generated message is (valid rounds weighted up: the stream must rate plenty of them)."""


@dataclass(frozen=True)
class Message:
    """A generated message: raw bytes, Kafka key, the outcome it must have, its round if it parses."""

    raw: bytes
    key: str
    expect: str
    round: dict | None = None
    kind: str = ""


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


def huge_int(data: st.DataObject, lo: int, hi: int) -> bytes:
    """An integer literal of ``lo`` to ``hi`` digits, either sign."""
    digits = data.draw(st.integers(lo, hi))
    return (b"-" if data.draw(st.booleans()) else b"") + b"9" * digits


def with_field(r: dict, name: str, literal: bytes) -> bytes:
    """The round as JSON with field ``name`` set to a raw JSON ``literal`` (any number text)."""
    body = {k: v for k, v in r.items() if k != name}
    return _dumps(body)[:-1] + b', "' + name.encode() + b'": ' + literal + b"}"


def nested(depth: int, leaf: object) -> object:
    for i in range(depth):
        leaf = [leaf] if i % 2 else {"k": leaf}
    return leaf


def edge_round(data: st.DataObject, kind: str, r: dict) -> bytes:
    """A valid round pushed to one edge of the contract (see EDGE_KINDS)."""
    standings = r["standings"]
    if kind == "extreme":
        what = data.draw(st.sampled_from(["weight", "perf_ceiling", "occurred_at", "time_text", "ranks"]))
        if what == "weight":
            return with_field(r, "weight", data.draw(st.sampled_from(
                [b"1e-6", b"1.5e-6", b"0.001", b"1", b"99.999", b"100", b"100.0", b"1E2"])))
        if what == "perf_ceiling":
            return with_field(r, "perf_ceiling", data.draw(st.sampled_from(
                [b"-1.7976931348623157e308", b"-1e300", b"-1", b"0", b"-0.0", b"5e-324", b"1e300",
                 b"1.7976931348623157e308", b"null", b"-" + b"9" * 300, b"9" * 308])))
        if what == "occurred_at":
            return with_field(r, "occurred_at", data.draw(st.sampled_from(
                [b"-62135596800", b"253402300799", b"0", b"-1", b"1e-300", b"-0", b"1700000000.000000000000001",
                 b"2.534023007989999e11"])))
        if what == "time_text":
            r["occurred_at"] = data.draw(st.sampled_from(
                ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59+00:00", "2024-02-29T23:59:59.999999999-23:59",
                 "1970-01-01t00:00:00z", "2023-11-14 22:13:20+14:00"]))
            return _dumps(r)
        ranks = sorted(data.draw(st.lists(st.integers(1, MAX_RANK), min_size=len(standings), max_size=len(standings))))
        if len(set(ranks)) == 1:
            ranks[0] = 1 if ranks[0] > 1 else 2
            ranks.sort()
        for s, rank in zip(standings, ranks):
            s["rank"] = rank
        return _dumps(r)
    if kind == "unicode":
        odd = data.draw(st.lists(st.sampled_from(ODD_PLAYERS), min_size=1, max_size=len(standings), unique=True))
        for s, player in zip(standings, odd):
            s["player"] = player
        if data.draw(st.booleans()):
            r["round_id"] = data.draw(st.sampled_from(["😀", "é" * (MAX_ID_LENGTH - 5), "\u0000", "a\u0301"])) + r["round_id"][-5:]
        if data.draw(st.booleans()):  # finishing-order form with a tie group
            r["standings"] = [standings[0]["player"], [s["player"] for s in standings[1:]]] if len(standings) > 2 \
                else [s["player"] for s in standings]
        return json.dumps(r, ensure_ascii=data.draw(st.booleans())).encode()
    if kind == "nested":  # unknown fields (not strict): nesting, odd numbers, all ignored
        r["extra"] = nested(data.draw(st.integers(1, 60)), data.draw(st.sampled_from([1, "x", None, [], {}])))
        raw = _dumps(r)
        return raw[:-1] + b', "odd": ' + data.draw(st.sampled_from([b"1e400", b"-1e400", b"NaN", b"9" * 4000])) + b"}"
    # large: exactly MAX_ROUND_SIZE players, ids of MAX_ID_LENGTH, the message just under MAX_MESSAGE_BYTES
    r["standings"] = [{"player": p, "rank": i + 1} for i, p in enumerate(data.draw(st.permutations(PLAYERS))[:MAX_ROUND_SIZE])]
    r["round_id"] = (r["round_id"] + "-" * MAX_ID_LENGTH)[:MAX_ID_LENGTH]
    raw = _dumps(r)
    pad = MAX_MESSAGE_BYTES - len(raw) - len(b', "pad": ""') - data.draw(st.integers(16, 64))
    return raw[:-1] + b', "pad": "' + b"p" * pad + b'"}'


def draw_message(data: st.DataObject, serial: int, valid: list[dict]) -> Message:
    """One message of a drawn kind, built from a fresh valid round broken in one way."""
    kind = data.draw(st.sampled_from(KINDS))
    message = _draw(data, kind, serial, valid)
    return Message(message.raw, message.key, message.expect, message.round, kind)


def _draw(data: st.DataObject, kind: str, serial: int, valid: list[dict]) -> Message:
    if kind in ("conflict", "duplicate") and not valid:  # nothing to re-use yet
        kind = "valid"
    r = _round(data, serial)
    standings = r["standings"]
    if kind == "valid":
        return Message(_dumps(r), r["ladder"], VALID, r)
    if kind in EDGE_KINDS:
        raw = edge_round(data, kind, r)
        return Message(raw, r["ladder"], VALID, json.loads(raw))
    if kind == "not_json":
        how = data.draw(st.sampled_from(["text", "deep"]))
        if how == "deep":  # nested beyond the decoder's recursion limit
            # past MAX_NESTING (below the decoder's own limit: must not depend on the caller's stack) or past both
            depth = data.draw(st.one_of(st.integers(MAX_NESTING, 990), st.integers(5_000, 30_000)))
            return Message(_dumps(r)[:-1] + b', "x": ' + b"[" * depth + b"]" * depth + b"}", r["ladder"], "not_json")
        text = data.draw(st.text(max_size=40))
        return Message(b"{" + text.encode("utf-8", "surrogatepass") + b",", r["ladder"], "not_json")
    if kind == "not_utf8":
        if data.draw(st.booleans()):
            return Message(b"\xff" + data.draw(st.binary(max_size=40)), r["ladder"], "not_utf8")
        surrogate = b"\\u%04x" % data.draw(st.integers(0xD800, 0xDFFF))  # a lone surrogate escape in an id
        if data.draw(st.booleans()):
            r["round_id"] = r["round_id"] + "@@"
        else:
            standings[0]["player"] = standings[0]["player"] + "@@"
        return Message(_dumps(r).replace(b"@@", surrogate), r["ladder"], "not_utf8")
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
            st.sampled_from([0, -1, -1000, 1.5, "1", None, MAX_RANK + 1, 10**400, -(10**400), 1e300]))
        return Message(_dumps(r), r["ladder"], "bad_rank")
    if kind == "bad_weight":
        literal = data.draw(st.sampled_from([b"0", b"-1", b"-0.5", b"NaN", b"Infinity", b"-Infinity", b'"1"', b"1e400",
                                             b"1e6", b"100.00000000001", b"1e-7", b"5e-324", b"1e300", b"-1e-300",
                                             b"big"]))
        return Message(with_field(r, "weight", huge_int(data, 310, 4000) if literal == b"big" else literal),
                       r["ladder"], "bad_weight")
    if kind == "bad_number":
        field = data.draw(st.sampled_from(["occurred_at", "perf_ceiling", "any"]))
        if field == "any":  # an integer over 4,300 digits anywhere: the decoder refuses it
            where = data.draw(st.sampled_from(["occurred_at", "weight", "perf_ceiling", "extra"]))
            return Message(with_field(r, where, huge_int(data, 4301, 6000)), r["ladder"], "bad_number")
        literal = data.draw(st.sampled_from([b"big", b"1e309", b"-1e400", b"NaN", b"Infinity", b"-Infinity"]
                                            + ([b"253402300800", b"-62135596801", b"1e12"] if field == "occurred_at"
                                               else [])))
        return Message(with_field(r, field, huge_int(data, 310, 4000) if literal == b"big" else literal),
                       r["ladder"], "bad_number")
    if kind == "id_too_long":
        long_id = "x" * data.draw(st.integers(MAX_ID_LENGTH + 1, 4 * MAX_ID_LENGTH))
        if data.draw(st.booleans()):
            r["round_id"] = long_id
        else:
            standings[0]["player"] = long_id
        return Message(_dumps(r), r["ladder"], "id_too_long")
    if kind == "message_too_large":
        pad = MAX_MESSAGE_BYTES + data.draw(st.integers(1, 4096))
        return Message(_dumps(r)[:-1] + b', "pad": "' + b"p" * pad + b'"}', r["ladder"], "message_too_large")
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
    changed["occurred_at"] = harness.BASE_TIME + serial * 600.0
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
            outcome = NO_OUTCOME if parsed.is_outcome_free(draws_rate=False) else VALID  # the workers' preset mmr
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
    kinds = Counter(m.kind for m in messages)
    assert set(kinds) == set(KINDS) and Counter(m.expect for m in messages)[VALID] >= MESSAGES // 4, kinds
    valid = [m.round for m in messages if m.expect == VALID]
    recorded = [m.round for m in messages if m.expect == NO_OUTCOME]
    rejected = {i: m.expect for i, m in enumerate(messages) if m.expect not in (VALID, NO_OUTCOME, DUPLICATE)}

    env = harness.worker_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, MAX_ROUND_SIZE=str(MAX_ROUND_SIZE),
                             MAX_ID_LENGTH=str(MAX_ID_LENGTH), MAX_MESSAGE_BYTES=str(MAX_MESSAGE_BYTES))
    ensure(Settings.from_env(env))
    worker = harness.Worker(env, tmp_path / "worker.log").start()
    try:
        offsets = publish_with_offsets(local_stack.bootstrap, f"{fresh_prefix}rounds", messages)
        harness.wait_drained(stack_redis_url, harness.expected_rounds(valid + recorded), [worker])
        letters = harness.consume_all(local_stack.bootstrap, f"{fresh_prefix}rounds-dlq", at_least=len(rejected))
        assert worker.process is not None and worker.process.poll() is None, "the worker died"
    finally:
        worker.stop()

    # the replay of every message as the stream read them: acceptance, dedup, then the engine
    harness.assert_equals_reference(stack_redis_url, harness.reference([m.raw for m in messages], engine.preset("mmr"),
                                                                       limits=LIMITS))
    by_origin: dict[tuple[int, int], str] = {}
    for _, value in letters:
        validate("dead-letter", value)
        letter = json.loads(value)
        origin = (letter["partition"], letter["offset"])
        assert by_origin.setdefault(origin, letter["reason"]) == letter["reason"]
        raw = messages[offsets.index(origin)].raw
        original = base64.b64decode(letter["original"])
        assert raw.startswith(original) and letter["original_length"] == len(raw) and len(value) <= MAX_MESSAGE_BYTES
        assert original == raw or len(raw) > MAX_MESSAGE_BYTES // 2
    assert by_origin == {offsets[i]: reason for i, reason in rejected.items()}

    client = redis.Redis.from_url(stack_redis_url)
    try:
        for r in recorded:
            assert client.hget(keys.round_record(r["ladder"], r["round_id"]), "status") == b"no_outcome"
        for r in valid:  # a conflicting re-use never replaced the first round
            assert client.hget(keys.round_record(r["ladder"], r["round_id"]), "status") == b"rated"
    finally:
        client.close()
