"""Redis equals ``stream replay`` on ANY input: the same messages, published to the stream and
written to a JSONL file, give the same ratings (within 1e-9) and the same rejections.

The input mixes valid rounds with re-published copies (identical bytes, and the same content
written differently), conflicting re-uses of round ids (also of an outcome-free round), and
messages the stream dead-letters (not JSON, numbers out of range, a lone surrogate, a weight too
large, a duplicate player). ``stream replay --skip-rejected`` must rate exactly what the stream
rated, and report per reason exactly what the stream dead-lettered.
"""

from __future__ import annotations

import csv
import json
import random
from collections import Counter
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

import fault_harness as faults_h
import pipeline_harness as harness
from stream.cli.main import app
from stream.pipeline.topics import ensure
from stream.settings import Settings
from stream.store import keys

pytestmark = pytest.mark.integration


def mixed_input(seed: int) -> tuple[list[tuple[str, bytes]], Counter[str], int]:
    """(key, message) pairs, the dead-letter reasons they must produce, and how many are duplicates."""
    rng = random.Random(seed)
    rounds = harness.synthetic_rounds(seed=seed, count=40, ladders=("alpha", "beta"), pool=14)
    out: list[tuple[str, bytes]] = []
    reasons: Counter[str] = Counter()
    duplicates = 0
    for i, r in enumerate(rounds):
        out.append((r["ladder"], json.dumps(r).encode()))
        earlier = rounds[rng.randrange(i + 1)]
        kind = rng.choice(["same", "reordered", "conflict", "bad", "none", "none"])
        if kind == "same":
            out.append((earlier["ladder"], json.dumps(earlier).encode()))
            duplicates += 1
        elif kind == "reordered":  # same content, other key order and float form
            copy = dict(reversed(list(earlier.items())), occurred_at=int(earlier["occurred_at"]))
            out.append((earlier["ladder"], json.dumps(copy).encode()))
            duplicates += 1
        elif kind == "conflict":
            out.append((earlier["ladder"], json.dumps(dict(earlier, weight=2.0)).encode()))
            reasons["conflict"] += 1
        elif kind == "bad":
            raw, reason = rng.choice([
                (b'{"round_id": "x", "standings": [', "not_json"),
                (b'{"round_id": "x", "occurred_at": 1' + b"0" * 400 + b', "standings": ["a", "b"]}', "bad_number"),
                (b'{"round_id": "x", "occurred_at": 1' + b"0" * 4400 + b', "standings": ["a", "b"]}', "bad_number"),
                (b'{"round_id": "x", "occurred_at": 1, "perf_ceiling": -1e400, "standings": ["a", "b"]}', "bad_number"),
                (b'{"round_id": "x\\udc00", "occurred_at": 1, "standings": ["a", "b"]}', "not_utf8"),
                (b'{"round_id": "x", "occurred_at": 1, "weight": 1e300, "standings": ["a", "b"]}', "bad_weight"),
                (b'{"round_id": "x", "occurred_at": 1, "standings": ["a", "a"]}', "duplicate_player"),
            ])
            out.append((r["ladder"], raw))
            reasons[reason] += 1
    # an outcome-free round is registered: a conflicting re-use of its id is rejected too
    lone = {"round_id": "lone", "ladder": "alpha", "occurred_at": harness.BASE_TIME, "standings": ["p000"]}
    out += [("alpha", json.dumps(lone).encode()), ("alpha", json.dumps(dict(lone, standings=["p000", "p001"])).encode())]
    reasons["conflict"] += 1
    return out, reasons, duplicates


def test_redis_equals_replay_on_a_mixed_input(local_stack, stack_redis_url: str, fresh_prefix: str,
                                              tmp_path: Path) -> None:
    messages, reasons, duplicates = mixed_input(seed=31)
    data = tmp_path / "input.jsonl"
    data.write_bytes(b"".join(raw + b"\n" for _, raw in messages))
    out = tmp_path / "replay.csv"
    result = CliRunner().invoke(app, ["replay", str(data), "-o", str(out), "--skip-rejected", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["rejected"] == dict(sorted(reasons.items())) and summary["duplicates"] == duplicates
    with out.open() as fh:
        replayed = {(row[0], row[1]): (float(row[2]), float(row[3]), int(row[4])) for row in list(csv.reader(fh))[1:]}

    env = faults_h.fault_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, tmp_path)
    ensure(Settings.from_env(env))
    worker = harness.Worker(env, tmp_path / "worker.log").start()
    try:
        for key in ("alpha", "beta"):  # each ladder's messages on its partition, in order
            harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", [raw for k, raw in messages if k == key],
                            key=key)
        rated = {}
        for _, raw in messages:
            try:
                r = json.loads(raw)
                rated.setdefault(r["ladder"], set()).add(r["round_id"])
            except (ValueError, KeyError, TypeError):
                pass
        expected = {ladder: {rid for rid in ids if not rid.startswith("x")} for ladder, ids in rated.items()}
        harness.wait_drained(stack_redis_url, expected, [worker], timeout_s=120)
        letters = faults_h.read_topic(local_stack.bootstrap, f"{fresh_prefix}rounds-dlq")
        assert worker.process is not None and worker.process.poll() is None, "the worker died"
    finally:
        worker.stop()
    assert Counter(json.loads(v)["reason"] for _, v in letters) == reasons

    client = redis.Redis.from_url(stack_redis_url)
    try:
        stored = {}
        for ladder in ("alpha", "beta"):
            for player in client.zrange(keys.leaderboard(ladder), 0, -1):
                mu, sigma, rounds = client.hmget(keys.player(ladder, player.decode()), ("mu", "sigma", "rounds"))
                stored[(ladder, player.decode())] = (float(mu), float(sigma), int(rounds))
    finally:
        client.close()
    assert set(stored) == set(replayed)
    for key, (mu, sigma, rounds) in replayed.items():
        got = stored[key]
        assert abs(got[0] - mu) <= harness.TOLERANCE and abs(got[1] - sigma) <= harness.TOLERANCE, (key, got, mu, sigma)
        assert got[2] == rounds, key
