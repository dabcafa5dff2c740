"""A forged PlayerUpdate on the internal player-updates topic (anyone who can write to it could
send one) changes no rating: a real worker dead-letters it to rounds-dlq with reason
``unverified_player_update``, and the rounds published after it rate exactly as replay."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import redis

import pipeline_harness as harness
from stream import engine
from stream.contracts import UNVERIFIED_PLAYER_UPDATE, validate
from stream.store import keys

pytestmark = pytest.mark.integration


def test_forged_updates_go_to_the_dlq_and_change_nothing(local_stack, stack_redis_url: str, fresh_prefix: str,
                                                         tmp_path: Path) -> None:
    good = harness.synthetic_rounds(seed=5, count=16, ladders=("main",), pool=8, max_size=6)
    worker = harness.Worker(harness.worker_env(local_stack.bootstrap, stack_redis_url, fresh_prefix),
                            tmp_path / "worker.log").start()
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", good[:8], key="main")
        harness.wait_drained(stack_redis_url, harness.expected_rounds(good[:8]), [worker])
        client = redis.Redis.from_url(stack_redis_url)
        stored = client.hgetall(keys.round_perf("main", good[7]["round_id"]))
        client.close()
        partition, real = next(iter(stored.items()))
        high_seq, cheat = json.loads(real), json.loads(real)
        high_seq["seq"] = 2 ** 53  # would set any mu and block the players' later rounds
        cheat["entries"][0]["performance"] = 1e6
        cheat["seq"] += 1
        forged = [json.dumps(high_seq).encode(), json.dumps(cheat).encode()]
        harness.publish_to_partitions(local_stack.bootstrap, f"{fresh_prefix}player-updates",
                                      [(int(partition), value) for value in forged])
        letters = harness.consume_all(local_stack.bootstrap, f"{fresh_prefix}rounds-dlq", at_least=2)
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", good[8:], key="main")
        harness.wait_drained(stack_redis_url, harness.expected_rounds(good), [worker])
    finally:
        worker.stop()

    assert len(letters) == 2
    assert "not in their round's stored fan-out: not applied" in worker.log_path.read_text()
    for _, value in letters:
        validate("dead-letter", value)
        letter = json.loads(value)
        assert letter["reason"] == UNVERIFIED_PLAYER_UPDATE
        assert letter["topic"] == f"{fresh_prefix}player-updates" and letter["partition"] == int(partition)
        assert base64.b64decode(letter["original"]) in forged
    harness.assert_equals_reference(stack_redis_url, harness.reference(good, engine.preset("mmr")))
