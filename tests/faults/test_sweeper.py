"""Lost messages: only the sweeper can finish the round, and it does.

* ``drop_one_fanout_message``: one PlayerUpdate of a round is never sent (as if the framework
  lost it); the round stays ``pending`` until the sweeper re-sends its stored fan-out.
* ``drop_round_after_register``: a round's input is acked right after registration (phase
  one never ran); the round stays ``registered`` until the sweeper completes its phase one
  from the stored body.

The first round is published alone, so no later round's barrier can re-drive it: the
sweeper's log line proves who did. Then the rest of the stream follows and the usual end
checks hold.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

import fault_harness as faults_h
import pipeline_harness as harness
from stream import engine
from stream.pipeline import faults
from stream.pipeline.topics import ensure
from stream.settings import Settings
from stream.store import keys

pytestmark = pytest.mark.integration

ROUNDS = 30
STUCK_STATUS = {faults.DROP_ONE_FANOUT_MESSAGE: b"pending", faults.DROP_ROUND_AFTER_REGISTER: b"registered"}


@pytest.mark.parametrize("point", faults_h.DROP_POINTS)
def test_sweeper_completes_a_round_whose_message_was_lost(point: str, local_stack, stack_redis_url: str,
                                                          fresh_prefix: str, tmp_path: Path) -> None:
    rounds = harness.synthetic_rounds(seed=5, count=ROUNDS, ladders=("alpha", "beta"), pool=16, min_size=8)
    first = rounds[0]
    env = faults_h.fault_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, tmp_path, point,
                             SWEEP_TIMEOUT_S="3")
    ensure(Settings.from_env(env))
    worker = harness.Worker(env, tmp_path / "worker.log").start()
    client = redis.Redis.from_url(stack_redis_url)
    record = keys.round_record(first["ladder"], first["round_id"])
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", [first])
        faults_h.wait_until(lambda: (tmp_path / "fault.marker").exists(), "the fault", logs=worker.log)
        faults_h.wait_until(lambda: client.hget(record, "status") is not None, "the registration", logs=worker.log)
        assert client.hget(record, "status") == STUCK_STATUS[point], "the lost message left the round stuck"
        faults_h.wait_until(lambda: client.hget(record, "status") == b"rated", "the sweeper", logs=worker.log)
        assert "sweeper re-drove" in worker.log_path.read_text()
        faults_h.wait_until(lambda: client.zcard(keys.incomplete_rounds(first["ladder"])) == 0,
                            "the round to leave the ledger (events confirmed)", logs=worker.log)

        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", rounds[1:])
        harness.wait_drained(stack_redis_url, harness.expected_rounds(rounds), [worker])
        harness.assert_equals_reference(stack_redis_url, harness.reference(rounds, engine.preset("mmr")))
        faults_h.assert_events_complete(local_stack.bootstrap, fresh_prefix, rounds)
    finally:
        client.close()
        worker.stop()


def test_next_round_completes_an_earlier_registered_round_first(local_stack, stack_redis_url: str,
                                                                fresh_prefix: str, tmp_path: Path) -> None:
    """The whole stream at once: the abandoned round is completed by the ladder's next round
    (or the sweeper, whichever is first), before any later round reads its priors."""
    rounds = harness.synthetic_rounds(seed=6, count=ROUNDS, ladders=("alpha",), pool=10, min_size=6, max_size=8)
    env = faults_h.fault_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, tmp_path,
                             faults.DROP_ROUND_AFTER_REGISTER, SWEEP_TIMEOUT_S="60")
    ensure(Settings.from_env(env))
    worker = harness.Worker(env, tmp_path / "worker.log").start()
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", rounds)
        harness.wait_drained(stack_redis_url, harness.expected_rounds(rounds), [worker])
        assert (tmp_path / "fault.marker").exists()
        assert "left registered" in worker.log_path.read_text()
        harness.assert_equals_reference(stack_redis_url, harness.reference(rounds, engine.preset("mmr")))
        faults_h.assert_events_complete(local_stack.bootstrap, fresh_prefix, rounds)
    finally:
        worker.stop()
