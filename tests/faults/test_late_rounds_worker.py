"""Late rounds through real workers (Tansu broker, redis-server, two workers): randomized streams
(hypothesis) on a ladder rated by occurred_at (LADDER_ORDER) and one rated in publish order, with
late rounds interleaved (published in bursts, so some arrive after the rounds they precede are
rated and some in the same phase-one batch). Afterwards Redis equals ``stream replay`` of the
history in (occurred_at, publish order) within 1e-9 (the replay orders it through the same
``first_copies``), every late round was inserted by its ``insert`` correction, the players it
moved got ``correction`` RatingChanges, and the published ladder is rated in publish order."""

from __future__ import annotations

import json
import random
import time
import uuid
from pathlib import Path

import pytest
import redis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import fault_harness as faults_harness
import pipeline_harness as harness
from stream import engine
from stream.pipeline.faults import CORRECTION_MID_RERATE
from tests.faults.injection import CRASH_EXIT_CODE
from stream.pipeline.topics import ensure
from stream.settings import Settings
from stream.store import keys

pytestmark = pytest.mark.integration

ORDER = '{"timed": "occurred_at"}'
LADDERS = ("timed", "pub")


def stream_of(seed: int, count: int, share: float) -> list[dict]:
    """Rounds on both ladders, a share of them (and a few of ``timed`` at least) moved back in time."""
    rng = random.Random(seed)
    rounds = harness.synthetic_rounds(seed=seed, count=count, ladders=LADDERS, pool=16, max_size=6)
    timed = [i for i, r in enumerate(rounds) if r["ladder"] == "timed"]
    forced = {timed[len(timed) * k // 4] for k in (1, 2, 3)}
    for i, r in enumerate(rounds):
        if i > 5 and (rng.random() < share or i in forced):
            r["occurred_at"] = rounds[rng.randrange(i)]["occurred_at"] - rng.choice([0.0, 1.0, harness.DAY_S])
    return rounds


@settings(max_examples=2, deadline=None, database=None, suppress_health_check=list(HealthCheck),
          phases=[Phase.generate])  # each example runs a live pipeline: no shrinking
@given(seed=st.integers(0, 10**6), count=st.integers(60, 120), share=st.sampled_from([0.1, 0.3]),
       bursts=st.integers(2, 5))
def test_late_rounds_through_two_workers(local_stack, tmp_path: Path, seed: int, count: int, share: float,
                                         bursts: int) -> None:
    run(local_stack, tmp_path, seed, count, share, bursts)


def test_late_rounds_with_a_kill_mid_insert(local_stack, tmp_path: Path) -> None:
    """A worker killed (exit 137) in the middle of an insert's writes: restarted, the redelivered
    insert resumes under its hold, and Redis still equals the replay."""
    assert run(local_stack, tmp_path, seed=21, count=80, share=0.2, bursts=3, fault=CORRECTION_MID_RERATE) == 1
    assert (tmp_path / "fault.marker").exists()


def run(local_stack, tmp_path: Path, seed: int, count: int, share: float, bursts: int, fault: str = "") -> int:
    """Publish a stream of ``stream_of(seed, count, share)`` in ``bursts`` to two workers, wait until it
    drained (restarting a worker the fault point killed), check; returns how many workers crashed."""
    url = local_stack.redis_url
    redis.Redis.from_url(url).flushall()
    prefix = f"t{uuid.uuid4().hex[:10]}-"
    rounds = stream_of(seed, count, share)
    env = faults_harness.fault_env(local_stack.bootstrap, url, prefix, tmp_path, fault, HOLD_POLL_S="0.05",
                                   LADDER_ORDER=ORDER)
    ensure(Settings.from_env(env))
    workers = [harness.Worker(env, tmp_path / f"{prefix}worker{i}.log").start() for i in range(2)]
    client = redis.Redis.from_url(url)
    crashes = 0

    def logs() -> str:
        return "\n".join(w.log() for w in workers)

    def restart_crashed() -> int:
        crashed = 0
        for i, w in enumerate(list(workers)):
            assert w.process is not None
            code = w.process.poll()
            if code is None:
                continue
            assert fault and code == CRASH_EXIT_CODE, f"a worker exited with {code}:\n{logs()}"
            crashed += 1
            workers[i] = harness.Worker(w.env, w.log_path.with_suffix(".restarted.log")).start()
        return crashed

    try:
        cuts = sorted(random.Random(seed).sample(range(1, count), bursts - 1))
        for lo, hi in zip([0, *cuts], [*cuts, count]):
            harness.publish(local_stack.bootstrap, f"{prefix}rounds", rounds[lo:hi])
            time.sleep(0.3)
        harness.publish(local_stack.bootstrap, f"{prefix}rounds", rounds[-3:])  # re-published: no-ops
        expected = harness.expected_rounds(rounds)
        deadline = time.monotonic() + harness.DRAIN_TIMEOUT_S
        while True:
            statuses = faults_harness.statuses(client, expected)
            held = [client.hget(keys.ladder(ladder), "hold") for ladder in LADDERS]
            if all(s in (b"rated", b"no_outcome") for s in statuses.values()) and held == [None, None]:
                break
            crashes += restart_crashed()
            assert time.monotonic() < deadline, f"not drained: holds {held}\n{logs()}"
            time.sleep(harness.POLL_S)
        faults_harness.wait_ledgers_empty(url, LADDERS, logs)
        events = faults_harness.read_topic(local_stack.bootstrap, f"{prefix}rating-changes")
        inserts = client.hgetall(keys.corrections("timed"))
        records = {r["round_id"]: client.hgetall(keys.round_record("timed", r["round_id"]))
                   for r in rounds if r["ladder"] == "timed"}
    finally:
        client.close()
        faults_harness.stop_all(workers)
    harness.assert_equals_reference(url, harness.reference(rounds, engine.preset("mmr"), ladder_order=ORDER))

    inserted = {rid for rid, record in records.items() if b"inserted_by" in record}
    timed = [r for r in rounds if r["ladder"] == "timed"]
    newest = -float("inf")
    late = set()
    for r in timed:  # a round older than every earlier one of its ladder is late, whatever the timing
        if r["occurred_at"] < newest:
            late.add(r["round_id"])
        newest = max(newest, r["occurred_at"])
    assert late and late == inserted, (late, inserted)
    assert all(json.loads(entry)["kind"] == "insert" for entry in inserts.values())
    by_id = harness.events_by_id(events)
    differing = {i: c for i, c in by_id.items() if len(c) != 1}
    assert not differing, list(differing.items())[:2]
    changes = [json.loads(v) for contents in by_id.values() for v in contents]
    corrections = [c for c in changes if c.get("kind") == "correction"]
    assert corrections and {c["ladder"] for c in corrections} == {"timed"}
    assert {c["correction_id"] for c in corrections} <= {k.decode() for k in inserts}
    assert all((c["mu_before"], c["sigma_before"]) != (c["mu_after"], c["sigma_after"]) for c in corrections)
    assert not any(c["ladder"] == "timed" and c["round_id"] in inserted and c.get("kind") != "correction"
                   for c in changes), "an inserted round is rated by its insert only"
    return crashes
