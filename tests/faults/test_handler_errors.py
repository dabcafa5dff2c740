"""A handler's unexpected exception never lets the stream move past its input.

* ``raise_in_phase_one`` / ``raise_in_phase_two`` (stream/pipeline/faults.py): a handler raises
  a plain RuntimeError (what a bug or a race does) several times in a row, half way through
  its work. The worker must neither die nor ack the input: it retries (retry.py) until the
  handler succeeds. The round is still rated, every player's history lists the ladder's rounds
  in publish order (the later rounds came after it), Redis equals ``stream replay`` and every
  rating-change event is on Kafka.
* Garbage on the internal ``player-updates`` topic: the malformed messages go to
  ``rounds-dlq`` (reason ``bad_player_update``, where they were read) and the valid update
  fetched in the same batch is applied.
"""

from __future__ import annotations

import base64
import json
from collections import defaultdict
from pathlib import Path

import pytest
import redis

import fault_harness as faults_h
import pipeline_harness as harness
from stream import engine
from stream.contracts import validate
from stream.pipeline import faults
from tests.faults import injection
from stream.contracts.round import BAD_PLAYER_UPDATE
from stream.pipeline.topics import ensure
from stream.settings import Settings
from stream.store import keys

pytestmark = pytest.mark.integration

ROUNDS = 40


def assert_histories_in_publish_order(redis_url: str, rounds: list[dict]) -> None:
    """Each player's stored history is the ladder's rounds they played, in publish order."""
    played: dict[tuple[str, str], list[str]] = defaultdict(list)
    for r in rounds:
        for standing in r["standings"]:
            played[(r["ladder"], standing["player"])].append(r["round_id"])
    client = redis.Redis.from_url(redis_url)
    try:
        for (ladder, player), wanted in sorted(played.items()):
            history = [json.loads(entry)["round_id"] for entry in client.lrange(keys.history(ladder, player), 0, -1)]
            assert history == wanted, f"{ladder}/{player}: history {history}, publish order {wanted}"
    finally:
        client.close()


@pytest.mark.parametrize("point", faults_h.RAISE_POINTS)
def test_handler_raising_is_retried_and_the_stream_stays_in_order(point: str, local_stack, stack_redis_url: str,
                                                                  fresh_prefix: str, tmp_path: Path) -> None:
    rounds = harness.synthetic_rounds(seed=11, count=ROUNDS, ladders=("alpha", "beta"), pool=16, min_size=6)
    env = faults_h.fault_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, tmp_path, point)
    ensure(Settings.from_env(env))
    worker = harness.Worker(env, tmp_path / "worker.log").start()
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", rounds)
        # wait_drained fails if the worker dies: the error must be retried in place
        harness.wait_drained(stack_redis_url, harness.expected_rounds(rounds), [worker])
        marker = tmp_path / "fault.marker"
        # phase two raises after its Redis writes: a batch holding the last rounds is rated in
        # Redis before its fault point is reached and its retries are over
        faults_h.wait_until(marker.exists, "the fault point", logs=worker.log)
        faults_h.wait_until(lambda: f"succeeded after {injection.RAISE_TIMES} failed" in worker.log_path.read_text(),
                            "the retries to end", logs=worker.log)
        assert marker.read_text().count("raise ") == injection.RAISE_TIMES, marker.read_text()
        log = worker.log_path.read_text()
        assert "raised unexpectedly (InjectedFault" in log, log[-3000:]
        assert "Traceback" in log, "the unexpected error is logged with its traceback"
        assert f"succeeded after {injection.RAISE_TIMES} failed attempt(s)" in log, log[-3000:]
        harness.assert_equals_reference(stack_redis_url, harness.reference(rounds, engine.preset("mmr")))
        assert_histories_in_publish_order(stack_redis_url, rounds)
        faults_h.wait_ledgers_empty(stack_redis_url, ["alpha", "beta"], logs=worker.log)
        faults_h.assert_events_complete(local_stack.bootstrap, fresh_prefix, rounds)
        assert worker.process is not None and worker.process.poll() is None, "the worker died"
    finally:
        worker.stop()


def publish_with_offsets(bootstrap: str, topic: str, partition: int, values: list[bytes]) -> list[int]:
    """Publish raw values to one partition in one flush; their offsets."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=50)
    try:
        futures = [producer.send(topic, value=v, partition=partition) for v in values]
        producer.flush()
        return [f.get(timeout=30).offset for f in futures]
    finally:
        producer.close()


GARBAGE = [b"\xff\xfe not utf-8", b"{not json", b'{"ladder": "alpha", "round_id": "r00000"}', b"[]"]


def test_malformed_player_update_goes_to_the_dlq_and_the_batch_is_applied(local_stack, stack_redis_url: str,
                                                                          fresh_prefix: str, tmp_path: Path) -> None:
    rounds = harness.synthetic_rounds(seed=12, count=12, ladders=("alpha",), pool=16, min_size=8)
    first = rounds[0]
    # the first fan-out message is dropped and the sweeper stays away: the test itself sends
    # that PlayerUpdate, behind garbage, to the same partition in one flush (one batch)
    env = faults_h.fault_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, tmp_path,
                             faults.DROP_ONE_FANOUT_MESSAGE, SWEEP_TIMEOUT_S="600")
    ensure(Settings.from_env(env))
    worker = harness.Worker(env, tmp_path / "worker.log").start()
    client = redis.Redis.from_url(stack_redis_url)
    record = keys.round_record(first["ladder"], first["round_id"])
    topic = f"{fresh_prefix}player-updates"
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", [first])
        faults_h.wait_until(lambda: client.hget(record, "status") == b"pending" and (tmp_path / "fault.marker").exists(),
                            "the round pending with one fan-out message lost", logs=worker.log)
        stored = client.hgetall(keys.round_perf(first["ladder"], first["round_id"]))
        partition = min(int(p) for p in stored)
        dropped = stored[str(partition).encode()]
        offsets = publish_with_offsets(local_stack.bootstrap, topic, partition, GARBAGE + [dropped])
        faults_h.wait_until(lambda: client.hget(record, "status") == b"rated", "the round rated", logs=worker.log)

        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", rounds[1:])
        harness.wait_drained(stack_redis_url, harness.expected_rounds(rounds), [worker])
        harness.assert_equals_reference(stack_redis_url, harness.reference(rounds, engine.preset("mmr")))
        faults_h.assert_events_complete(local_stack.bootstrap, fresh_prefix, rounds)

        letters = [json.loads(v) for _, v in faults_h.read_topic(local_stack.bootstrap, f"{fresh_prefix}rounds-dlq")]
        for letter in letters:
            validate("dead-letter", letter)
        got = sorted((letter["offset"], base64.b64decode(letter["original"])) for letter in letters)
        assert got == sorted(zip(offsets[:len(GARBAGE)], GARBAGE)), got
        for letter in letters:
            assert letter["reason"] == BAD_PLAYER_UPDATE
            assert (letter["topic"], letter["partition"]) == (topic, partition)
            assert letter["message"].startswith("not a PlayerUpdate")
        assert "not PlayerUpdates or kept raising: sent to the DLQ" in worker.log_path.read_text()
        assert worker.process is not None and worker.process.poll() is None, "the worker died"
    finally:
        client.close()
        worker.stop()
