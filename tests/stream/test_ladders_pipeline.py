"""Per-ladder models through the real pipeline: workers configured with LADDERS (an Elo-MMR
preset, glicko, trueskill with team rounds, and the "*" fallback) rate a multi-ladder stream on the real broker and
Redis, and Redis equals ``stream replay --ladders`` of the same rounds within 1e-9; restarted
with another model for a ladder that has rated rounds, the worker dead-letters its new rounds
``model_changed`` and keeps rating the other ladders."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

import pipeline_harness as harness
from stream.cli.main import app
from stream.contracts import DeadLetter, validate
from stream.contracts.round import MODEL_CHANGED
from stream.store import keys
from tests.contracts.wire_oracle import letter_from_json

pytestmark = pytest.mark.integration

LADDERS = {"a": {"model": "mmx"}, "b": {"model": "glicko"}, "c": {"model": "trueskill"},
           "*": {"model": "mmr-bounded"}}
ROUNDS = 160


def replay_csv(rounds: list[dict], tmp_path: Path, ladders: dict[str, object]) -> dict[tuple[str, str], tuple[float, float, int]]:
    """``stream replay INPUT --ladders JSON --output CSV``, read back."""
    source, output = tmp_path / "rounds.jsonl", tmp_path / "ratings.csv"
    source.write_text("".join(json.dumps(r) + "\n" for r in rounds))
    result = CliRunner().invoke(app, ["replay", str(source), "--ladders", json.dumps(ladders), "--output", str(output),
                                      "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.strip().splitlines()[-1])["ladders"] == {
        "a": "mmx", "b": "glicko", "c": "trueskill", "d": "mmr-bounded"}
    with output.open() as fh:
        return {(row["ladder"], row["player"]): (float(row["mu"]), float(row["sigma"]), int(row["rounds"]))
                for row in csv.DictReader(fh)}


def stored(redis_url: str, ladders: set[str]) -> dict[tuple[str, str], tuple[float, float, int]]:
    client = redis.Redis.from_url(redis_url)
    try:
        out = {}
        for ladder in ladders:
            for member in client.zrange(keys.leaderboard(ladder), 0, -1):
                mu, sigma, rounds = client.hmget(keys.player(ladder, member.decode()), ("mu", "sigma", "rounds"))
                out[(ladder, member.decode())] = (float(mu), float(sigma), int(rounds))
        return out
    finally:
        client.close()


def test_workers_with_ladders_equal_replay_ladders(local_stack, stack_redis_url: str, fresh_prefix: str,
                                                   tmp_path: Path) -> None:
    rounds = harness.synthetic_rounds(seed=11, count=ROUNDS, ladders=("a", "b", "c", "d"), pool=25, max_size=8)
    individual = sum(len(r["standings"]) for r in rounds)
    rng = random.Random(11)
    for k in range(20):  # TrueSkill team rounds (partial play, an individual entry) on ladder "c"
        players = rng.sample([f"p{i:03d}" for i in range(25)], 5)
        rounds.insert(rng.randint(0, len(rounds)), {
            "round_id": f"team{k}", "ladder": "c", "occurred_at": harness.BASE_TIME + k,
            "standings": [{"team": "red", "players": players[:2], "rank": rng.randint(1, 2)},
                          {"team": "blue", "players": [players[2], {"player": players[3], "weight": 0.5}], "rank": 2},
                          {"player": players[4], "rank": 3}]})
    env = harness.worker_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, partitions=4,
                             LADDERS=json.dumps(LADDERS), PHASE_ONE_BATCH="16")
    from stream.pipeline.topics import ensure
    from stream.settings import Settings
    ensure(Settings.from_env(env))
    workers = [harness.Worker(env, tmp_path / f"worker{i}.log").start() for i in range(2)]
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", rounds)
        harness.wait_drained(stack_redis_url, harness.expected_rounds(rounds), workers)
        events = harness.consume_all(local_stack.bootstrap, f"{fresh_prefix}rating-changes",
                                     at_least=individual + 20 * 5)
    finally:
        harness.stop_workers(workers)
    want = replay_csv(rounds, tmp_path, LADDERS)
    got = stored(stack_redis_url, {"a", "b", "c", "d"})
    assert set(got) == set(want)
    for key, (mu, sigma, n) in got.items():
        assert abs(mu - want[key][0]) <= harness.TOLERANCE and abs(sigma - want[key][1]) <= harness.TOLERANCE, key
        assert n == want[key][2], key
    for _, value in events:
        validate("rating-change", value)
    client = redis.Redis.from_url(stack_redis_url)
    assert {ladder: client.hget(keys.ladder(ladder), "model") for ladder in "abcd"} == {
        "a": b"mmx", "b": b"glicko", "c": b"trueskill", "d": b"mmr-bounded"}
    client.close()

    # the same ladders under another model for "b": its new rounds are dead-lettered, "a" is rated
    changed = {**LADDERS, "b": {"model": "mmr"}}
    env = {**env, "LADDERS": json.dumps(changed)}
    late = [{"round_id": "late-b", "ladder": "b", "occurred_at": harness.BASE_TIME + 1e6,
             "standings": [{"player": "p001", "rank": 1}, {"player": "p002", "rank": 2}]},
            {"round_id": "late-a", "ladder": "a", "occurred_at": harness.BASE_TIME + 1e6,
             "standings": [{"player": "p001", "rank": 1}, {"player": "p002", "rank": 2}]}]
    worker = harness.Worker(env, tmp_path / "worker-changed.log").start()
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", late)
        harness.wait_drained(stack_redis_url, {"a": {"late-a"}}, [worker])
        letters = [letter_from_json(value) for _, value in
                   harness.consume_all(local_stack.bootstrap, f"{fresh_prefix}rounds-dlq", at_least=1)]
    finally:
        worker.stop()
    assert [(d.reason, json.loads(d.original)["round_id"]) for d in letters] == [(MODEL_CHANGED, "late-b")]
    assert "re-rate" in letters[0].message
    assert worker.log().count("re-rate") == 1  # logged once
