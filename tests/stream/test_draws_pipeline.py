"""Draws through the real pipeline (broker, Redis, two workers): the issue's reproduction on a
TrueSkill ladder (a drawn 3v3 moves all six players), a drawn duel on the default Elo-MMR preset
(the weaker player up, the stronger down), a draw on an ``mmr`` ladder recorded ``no_outcome``;
Redis equals ``stream replay --ladders`` of the same rounds, every moved player gets an event."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

import pipeline_harness as harness
from stream.store import keys
from test_ladders_pipeline import stored
from stream.cli.main import app
from typer.testing import CliRunner

pytestmark = pytest.mark.integration

LADDERS = {"t": {"model": "trueskill"}, "m": {"model": "mmr"}, "*": {"model": "mmr-bounded"}}
SIX = ("p1", "p2", "p3", "p4", "p5", "p6")


def rounds() -> list[dict]:
    t0 = harness.BASE_TIME
    out = [
        {"round_id": "m1", "ladder": "t", "occurred_at": t0,
         "standings": [{"team": "a", "players": ["p1", "p2", "p3"], "rank": 1},
                       {"team": "b", "players": ["p4", "p5", "p6"], "rank": 2}]},
        {"round_id": "m2", "ladder": "t", "occurred_at": t0 + 60,
         "standings": [{"team": "a", "players": ["p1", "p4", "p5"], "rank": 1},
                       {"team": "b", "players": ["p2", "p3", "p6"], "rank": 1}]},
    ]
    for k in range(6):  # "strong" beats "weak" and others on the default preset's ladder "d"
        out.append({"round_id": f"d{k}", "ladder": "d", "occurred_at": t0 + 100 + k,
                    "standings": [{"player": "strong", "rank": 1}, {"player": f"o{k}", "rank": 2},
                                  {"player": "weak", "rank": 3}]})
    out.append({"round_id": "duel", "ladder": "d", "occurred_at": t0 + 200,
                "standings": [{"player": "weak", "rank": 1}, {"player": "strong", "rank": 1}]})
    out.append({"round_id": "m-first", "ladder": "m", "occurred_at": t0,
                "standings": [{"player": "x", "rank": 1}, {"player": "y", "rank": 2}]})
    out.append({"round_id": "m-draw", "ladder": "m", "occurred_at": t0 + 1,
                "standings": [{"player": "x", "rank": 1}, {"player": "y", "rank": 1}]})
    return out


def replay_csv(rounds: list[dict], tmp_path: Path) -> dict[tuple[str, str], tuple[float, float, int]]:
    import csv

    source, output = tmp_path / "rounds.jsonl", tmp_path / "ratings.csv"
    source.write_text("".join(json.dumps(r) + "\n" for r in rounds))
    result = CliRunner().invoke(app, ["replay", str(source), "--ladders", json.dumps(LADDERS), "--output", str(output),
                                      "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert summary["skipped"] == 1  # the draw on "m"
    with output.open() as fh:
        return {(row["ladder"], row["player"]): (float(row["mu"]), float(row["sigma"]), int(row["rounds"]))
                for row in csv.DictReader(fh)}


def test_draws_through_the_real_pipeline(local_stack, stack_redis_url: str, fresh_prefix: str, tmp_path: Path) -> None:
    published = rounds()
    env = harness.worker_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, partitions=4,
                             LADDERS=json.dumps(LADDERS))
    from stream.pipeline.topics import ensure
    from stream.settings import Settings
    ensure(Settings.from_env(env))
    workers = [harness.Worker(env, tmp_path / f"worker{i}.log").start() for i in range(2)]
    rated = sum(len(r["standings"]) if "player" in r["standings"][0] else 6 for r in published if r["ladder"] != "m")
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", published)
        harness.wait_drained(stack_redis_url, harness.expected_rounds(published), workers)
        events = [json.loads(v) for _, v in harness.consume_all(local_stack.bootstrap, f"{fresh_prefix}rating-changes",
                                                                at_least=rated + 2)]
    finally:
        harness.stop_workers(workers)
    client = redis.Redis.from_url(stack_redis_url)
    try:
        # the reproduction: the drawn round moved all six (rounds 2), each got its event
        assert [int(client.hget(keys.player("t", p), "rounds")) for p in SIX] == [2] * 6
        drawn = {e["player"]: e for e in events if e["round_id"] == "m2"}
        assert set(drawn) == set(SIX)
        assert all(e["sigma_after"] < e["sigma_before"] for e in drawn.values())
        assert all(e["mu_after"] > e["mu_before"] for p, e in drawn.items() if p in ("p1", "p4", "p5"))
        assert all(e["mu_after"] < e["mu_before"] for p, e in drawn.items() if p in ("p2", "p3", "p6"))
        # Elo-MMR (mmr-bounded): the weaker player's draw with the stronger raises him, lowers the other
        duel = {e["player"]: e for e in events if e["round_id"] == "duel"}
        assert duel["weak"]["mu_before"] < duel["strong"]["mu_before"]
        assert duel["weak"]["mu_after"] > duel["weak"]["mu_before"]
        assert duel["strong"]["mu_after"] < duel["strong"]["mu_before"]
        assert duel["weak"]["performance"] == duel["strong"]["performance"]  # one tie group, one equation
        # mmr keeps the authors' skip
        assert client.hget(keys.round_record("m", "m-draw"), "status") == b"no_outcome"
        assert not [e for e in events if e["round_id"] == "m-draw"]
    finally:
        client.close()
    want = replay_csv(published, tmp_path)
    got = stored(stack_redis_url, {"t", "d", "m"})
    assert set(got) == set(want)
    for key, (mu, sigma, n) in got.items():
        assert abs(mu - want[key][0]) <= harness.TOLERANCE and abs(sigma - want[key][1]) <= harness.TOLERANCE, key
        assert n == want[key][2], key
