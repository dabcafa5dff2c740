"""Liveness: phase one waiting at its per-player barrier never stops phase two's input.

Phase one (``rounds``) waits at the barrier (``stream/pipeline/barrier.py``) until phase two has
applied the previous round of each of its players; those updates reach phase two through the
same Faust consumer. Faust's conductor delivers every fetched record in turn and, when the
record's stream buffer is full, awaited its room before delivering the next one: a ``rounds``
buffer filled while phase one waited held back the ``player-updates`` records the wait needed,
and the worker stalled (phase one never took another round; the watchdog then exited it).
``compat.deliver_without_blocking`` keeps the partition pause but never blocks the delivery.

Here the posterior cache is off, the stream buffers are tiny and every round shares a player
with the previous one, all published before the worker starts (a fetch holds many more rounds
than the buffer), so the barrier waits on nearly every batch: the old code stalled within
seconds; now the stream drains and equals replay.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest
from mode.utils.queues import FlowControlEvent

import pipeline_harness as harness
from stream import engine
from stream.pipeline.runtime.compat import DeliveryQueue

ROUNDS = 1200
PLAYERS = 4
DRAIN_TIMEOUT_S = 150.0


def duels(seed: int, count: int) -> list[dict]:
    """Duels of one ladder among a handful of players: every round shares a player with the
    previous one (the barrier holds each batch until phase two applied the one before)."""
    rng = random.Random(seed)
    players = [f"p{i}" for i in range(PLAYERS)]
    rounds = []
    for i in range(count):
        a, b = rng.sample(players, 2)
        rounds.append({"round_id": f"r{i:05d}", "ladder": "solo", "occurred_at": harness.BASE_TIME + i * 60.0,
                       "standings": [{"player": a, "rank": 1}, {"player": b, "rank": 2}]})
    return rounds


def test_delivery_queue_takes_records_beyond_maxsize_and_pauses_at_high_pressure() -> None:
    """Faust's conductor never waits on a :class:`DeliveryQueue`: records beyond ``maxsize`` are
    taken at once, in order; the partition is still paused at high pressure (maxsize / 1.25) and
    resumed once the stream drained the buffer."""

    async def scenario() -> None:
        flow = FlowControlEvent()
        flow.resume()
        queue = DeliveryQueue(maxsize=8, flow_control=flow)
        paused: list[str] = []
        for i in range(20):
            assert not queue.full()
            if queue.full():  # what the conductor checks before putting without waiting
                raise AssertionError("the conductor would wait")
            queue.put_nowait_enhanced(i, on_pressure_high=lambda: paused.append("high"),
                                      on_pressure_drop=lambda: paused.append("drop"))
        await asyncio.wait_for(queue.put(20), 1.0)  # Channel.put does not wait either
        assert paused and paused[0] == "high"
        assert [queue.get_nowait() for _ in range(21)] == list(range(21))
        assert paused[-1] == "drop"

    asyncio.run(scenario())


@pytest.mark.integration
def test_barrier_wait_never_blocks_player_updates(local_stack, stack_redis_url: str, fresh_prefix: str,
                                                   tmp_path: Path) -> None:
    rounds = duels(15, ROUNDS)
    env = harness.worker_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, partitions=1,
                             PHASE_ONE_CACHE_PLAYERS="0", STREAM_BUFFER_MAXSIZE="8", PHASE_ONE_BATCH="4",
                             PHASE_TWO_BATCH="4", STALL_EXIT="false")
    from stream.pipeline.topics import ensure
    from stream.settings import Settings
    ensure(Settings.from_env(env))
    harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", rounds)  # all of it waits in the first fetches
    worker = harness.Worker(env, tmp_path / "worker.log").start()
    try:
        harness.wait_drained(stack_redis_url, harness.expected_rounds(rounds), [worker], timeout_s=DRAIN_TIMEOUT_S)
    finally:
        worker.stop()
    harness.assert_equals_reference(stack_redis_url, harness.reference(rounds, engine.preset("mmr")))
