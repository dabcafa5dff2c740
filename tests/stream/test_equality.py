"""THE guarantee: after the stream drains, Redis equals `stream replay` of the same rounds.

Two ladders sharing player ids, 4 partitions, 2 worker processes, a fast publisher (all rounds
sent at once), re-published rounds and re-sent player-update tasks. Every event emitted
validates against its JSON Schema; re-emitted events carry the same content.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import redis

import pipeline_harness as harness
from stream import engine
from stream.store import keys

pytestmark = pytest.mark.integration

ROUNDS = 300
DUPLICATES = 20
PARTITIONS = 4


def test_two_workers_two_ladders_equal_replay(local_stack, stack_redis_url: str, fresh_prefix: str, tmp_path: Path) -> None:
    rounds = harness.synthetic_rounds(seed=7, count=ROUNDS, ladders=("alpha", "beta"), pool=30)
    rng = random.Random(7)
    # duplicates: earlier rounds re-published later in the stream (same round_id, same content)
    stream_ = list(rounds)
    for original in rng.sample(rounds, DUPLICATES):
        stream_.insert(rng.randint(rounds.index(original) + 1, len(stream_)), original)
    env = harness.worker_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, partitions=PARTITIONS)
    from stream.pipeline.topics import ensure
    from stream.settings import Settings
    ensure(Settings.from_env(env))
    workers = [harness.Worker(env, tmp_path / f"worker{i}.log").start() for i in range(2)]
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", stream_)
        harness.wait_drained(stack_redis_url, harness.expected_rounds(rounds), workers)
        harness.assert_equals_reference(stack_redis_url, harness.reference(rounds, engine.preset("mmr")))

        participations = sum(len(r["standings"]) for r in rounds)
        first_events = harness.consume_all(local_stack.bootstrap, f"{fresh_prefix}rating-changes", at_least=participations)

        # duplicate tasks: re-send the stored fan-out of some rounds to player-updates
        client = redis.Redis.from_url(stack_redis_url)
        resent = rng.sample(rounds, 10)
        tasks = []
        for r in resent:
            for partition, value in client.hgetall(keys.round_perf(r["ladder"], r["round_id"])).items():
                tasks.append((int(partition), value))
        harness.publish_to_partitions(local_stack.bootstrap, f"{fresh_prefix}player-updates", tasks)
        re_emitted = sum(len(r["standings"]) for r in resent)
        events = harness.consume_all(local_stack.bootstrap, f"{fresh_prefix}rating-changes",
                                     at_least=len(first_events) + re_emitted)
        client.close()
    finally:
        harness.stop_workers(workers)
    # state unchanged by the duplicate tasks
    harness.assert_equals_reference(stack_redis_url, harness.reference(rounds, engine.preset("mmr")))

    by_id = harness.events_by_id(events)
    expected_ids = {f"{r['ladder']}/{r['round_id']}/{s['player']}" for r in rounds for s in r["standings"]}
    assert set(by_id) == expected_ids
    assert all(len(contents) == 1 for contents in by_id.values()), "a re-emitted event differs from the first"
    assert len(events) >= participations + re_emitted
