"""Corrections through real workers (Tansu broker, redis-server): voids and amends published to
``corrections`` while new rounds stream in, two workers, one of them killed (exit 137, what
``kill -9`` does) in the middle of a re-rate; afterwards Redis equals ``stream replay`` of the
corrected history within 1e-9, every correction is applied once, bad ones are dead-lettered."""

from __future__ import annotations

import base64
import json
import random
import time
from pathlib import Path

import pytest
import redis

import fault_harness as faults_harness
import pipeline_harness as harness
from stream import engine
from stream.contracts import validate
from stream.pipeline.faults import CORRECTION_MID_RERATE
from tests.faults.injection import CRASH_EXIT_CODE
from stream.pipeline.topics import ensure
from stream.settings import Settings
from stream.store import keys

pytestmark = pytest.mark.integration

LADDERS = ("alpha", "beta")


def test_corrections_with_two_workers_and_a_kill_mid_rerate(local_stack, stack_redis_url: str, fresh_prefix: str,
                                                            tmp_path: Path) -> None:
    rng = random.Random(14)
    rounds = harness.synthetic_rounds(seed=14, count=220, ladders=LADDERS, pool=30, max_size=8)
    env = faults_harness.fault_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, tmp_path,
                                   CORRECTION_MID_RERATE, HOLD_POLL_S="0.05")
    ensure(Settings.from_env(env))
    workers = [harness.Worker(env, tmp_path / f"worker{i}.log").start() for i in range(2)]
    client = redis.Redis.from_url(stack_redis_url)
    corrected = [dict(r) for r in rounds]
    voided: set[str] = set()
    sent: list[dict] = []
    bad = [b"{", json.dumps({"kind": "void", "ladder": "alpha", "round_id": "no-such-round"}).encode()]

    def logs() -> str:
        return "\n".join(w.log() for w in workers)

    def restart_crashed() -> int:
        crashed = 0
        for i, w in enumerate(list(workers)):
            assert w.process is not None
            code = w.process.poll()
            if code is None:
                continue
            assert code == CRASH_EXIT_CODE, f"worker exited with {code}:\n{w.log()}"
            crashed += 1
            workers[i] = harness.Worker(w.env, w.log_path.with_suffix(".restarted.log")).start()
        return crashed

    crashes = 0
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", rounds[:100])
        faults_harness.drain(stack_redis_url, harness.expected_rounds(rounds[:100]), workers, restart=False)
        for step in range(6):  # corrections of rated rounds, each with new rounds streaming in
            harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", rounds[100 + 20 * step:120 + 20 * step])
            target = rng.choice([r for r in corrected[:100] if r["round_id"] not in voided])
            if step % 2 == 0:
                voided.add(target["round_id"])
                correction = {"kind": "void", "ladder": target["ladder"], "round_id": target["round_id"]}
            else:
                ranks = [s["rank"] for s in target["standings"]]
                target["standings"] = [{"player": s["player"], "rank": r}
                                       for s, r in zip(reversed(target["standings"]), ranks)]
                correction = {"kind": "amend", "ladder": target["ladder"], "round": target, "reason": "scores were swapped"}
            sent.append(correction)
            harness.publish(local_stack.bootstrap, f"{fresh_prefix}corrections", [correction])
            crashes += restart_crashed()
            time.sleep(0.5)
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}corrections", [sent[0]])  # again: a no-op
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}corrections", bad, key="alpha")
        history = [r for r in corrected if r["round_id"] not in voided]
        expected = harness.expected_rounds(history)
        deadline = time.monotonic() + harness.DRAIN_TIMEOUT_S
        while True:
            crashes += restart_crashed()
            statuses = faults_harness.statuses(client, expected)
            applied = sum(client.hlen(keys.corrections(ladder)) for ladder in LADDERS)
            rejected = client.hlen(keys.rejected_corrections("alpha"))
            held = [client.hget(keys.ladder(ladder), "hold") for ladder in LADDERS]
            if (all(s in (b"rated", b"no_outcome") for s in statuses.values()) and applied == len(sent)
                    and rejected == 1 and held == [None, None]):
                break
            assert time.monotonic() < deadline, f"not done: {applied} corrections applied, holds {held}\n{logs()}"
            time.sleep(harness.POLL_S)
        faults_harness.wait_ledgers_empty(stack_redis_url, LADDERS, logs)
        events = faults_harness.read_topic(local_stack.bootstrap, f"{fresh_prefix}rating-changes")
        letters = faults_harness.read_topic(local_stack.bootstrap, f"{fresh_prefix}rounds-dlq")
    finally:
        client.close()
        faults_harness.stop_all(workers)
    assert crashes == 1, "the re-rate was never killed: nothing was tested"
    assert (tmp_path / "fault.marker").exists()
    harness.assert_equals_reference(stack_redis_url, harness.reference(history, engine.preset("mmr")))

    by_id = harness.events_by_id(events)  # every event valid, one content per event_id
    differing = {i: sorted(c) for i, c in by_id.items() if len(c) != 1}
    assert not differing, f"event_ids with two contents: {list(differing.items())[:2]}"
    corrections = [json.loads(v) for contents in by_id.values() for v in contents
                   if json.loads(v).get("kind") == "correction"]
    assert corrections and {c["round_id"] for c in corrections} <= {r["round_id"] for r in rounds[:100]}
    assert all((c["mu_before"], c["sigma_before"]) != (c["mu_after"], c["sigma_after"]) for c in corrections)
    for value in letters:
        validate("dead-letter", value[1])
    # the bad corrections (twice if the kill made them redelivered), and possibly player updates of
    # re-rated rounds redelivered after the kill: stale, not in the rewritten fan-out, not applied
    by_reason: dict[str, set[bytes]] = {}
    for _, value in letters:
        letter = json.loads(value)
        by_reason.setdefault(letter["reason"], set()).add(base64.b64decode(letter["original"]))
    assert by_reason.pop("not_json") == {bad[0]} and by_reason.pop("unknown_round") == {bad[1]}
    assert set(by_reason) <= {"unverified_player_update"}, by_reason
