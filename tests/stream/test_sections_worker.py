"""A real worker's phase two on multi-section ``player-updates`` messages (DESIGN15): the chained
fan-out of rounds that share players, every partition's sections joined into few messages, is
applied as replay rates the rounds, every event emitted once; a message with a malformed section
goes whole to the DLQ (``bad_player_update``); a forged section goes there alone
(``unverified_player_update``) while the real section beside it in the same message is handled."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import pytest

import pipeline_harness as harness
from stream import engine
from stream.contracts import UNVERIFIED_PLAYER_UPDATE, validate
from stream.contracts.round import BAD_PLAYER_UPDATE
from stream.pipeline.context import PipelineContext
from stream.pipeline.messages import FanOutMessage, Incoming, join_fanout, split_sections
from stream.pipeline.phase_one import handle_rounds
from stream.pipeline.topics import ensure
from stream.settings import Settings

pytestmark = pytest.mark.integration

PARTITIONS = 4


async def seed(redis_url: str, rounds: list[dict]) -> list[list[FanOutMessage]]:
    """Phase one of ``rounds`` as one batch (``handle_rounds``), without Kafka: each round's sections."""
    ctx = PipelineContext.from_settings(Settings(redis_url=redis_url, partitions=PARTITIONS, engine_preset="mmr"))
    try:
        batch = await handle_rounds(ctx, [Incoming(json.dumps(r).encode()) for r in rounds])
        return [result.updates for result in batch.results if result is not None]
    finally:
        await ctx.store.close()


def test_a_worker_applies_joined_sections_and_sets_bad_ones_aside(local_stack, stack_redis_url: str,
                                                                  fresh_prefix: str, tmp_path: Path) -> None:
    rounds = harness.synthetic_rounds(seed=31, count=40, ladders=("alpha", "beta"), pool=10, max_size=5)
    env = harness.worker_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, partitions=PARTITIONS)
    ensure(Settings.from_env(env))
    fanouts = asyncio.run(seed(stack_redis_url, rounds))
    joined = join_fanout([m for messages in fanouts for m in messages], 2_000)
    assert len(joined) < sum(map(len, fanouts)) and any(len(split_sections(m.value)) > 2 for m in joined)

    first, other = fanouts[0][0], fanouts[1][0]
    forged = json.loads(first.value)
    forged["entries"][0]["performance"] = 1e6
    forged_section = json.dumps(forged, separators=(",", ":")).encode()
    with_forged = b"\n".join([forged_section, first.value])  # the forged section, then the real one
    malformed = b"\n".join([other.value, b'{"ladder": "alpha"'])  # a real section, then garbage
    topic = f"{fresh_prefix}player-updates"
    worker = harness.Worker(env, tmp_path / "worker.log").start()
    try:
        harness.publish_to_partitions(local_stack.bootstrap, topic, [(first.partition, with_forged),
                                                                     (other.partition, malformed)])
        harness.publish_to_partitions(local_stack.bootstrap, topic, [(m.partition, m.value) for m in joined])
        harness.wait_drained(stack_redis_url, harness.expected_rounds(rounds), [worker])
        letters = [json.loads(v) for _, v in harness.consume_all(local_stack.bootstrap, f"{fresh_prefix}rounds-dlq",
                                                                  at_least=2)]
        participations = sum(len(r["standings"]) for r in rounds)
        events = harness.consume_all(local_stack.bootstrap, f"{fresh_prefix}rating-changes", at_least=participations)
    finally:
        worker.stop()

    harness.assert_equals_reference(stack_redis_url, harness.reference(rounds, engine.preset("mmr")))
    by_id = harness.events_by_id(events)
    assert len(by_id) == participations and all(len(contents) == 1 for contents in by_id.values())
    for letter in letters:
        validate("dead-letter", letter)
    got = sorted((letter["reason"], base64.b64decode(letter["original"])) for letter in letters)
    assert got == sorted([(BAD_PLAYER_UPDATE, malformed), (UNVERIFIED_PLAYER_UPDATE, forged_section)])
    assert all(letter["topic"] == topic for letter in letters)
