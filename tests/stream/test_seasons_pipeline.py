"""Seasons through the real pipeline (broker, Redis, two workers): ladders with a season schedule
and a soft reset (sigma raised, mu pulled toward a centre) rate a stream whose rounds cross two
season starts, individuals and teams; Redis equals ``stream replay --ladders`` of the same rounds
within 1e-9, and differs from the same stream without seasons (the resets happened)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import pipeline_harness as harness
from test_ladders_pipeline import stored

pytestmark = pytest.mark.integration

ROUNDS = 200
"""Synthetic rounds a quarter of a day apart: 50 days; the seasons start on days 15 and 35."""


def _iso(offset_days: float) -> str:
    from stream.engine.season_schedule import iso_time

    return iso_time(harness.BASE_TIME + offset_days * harness.DAY_S)


SEASONS = {"schedule": [{"name": "S1", "start": _iso(15)}, {"name": "S2", "start": _iso(35)}],
           "sigma_to": 220.0, "sigma_share": 0.6, "mu_pull": 0.3}
LADDERS = {"s": {"model": "mmr-bounded", "seasons": SEASONS},
           "x": {"model": "mmx", "seasons": {**SEASONS, "centre": 1450.0, "mu_pull": 0.1}},
           "*": {"model": "mmr-bounded"}}


def rounds() -> list[dict]:
    out = harness.synthetic_rounds(seed=32, count=ROUNDS, ladders=("s", "x", "plain"), pool=24, max_size=6)
    rng = random.Random(32)
    for k in range(16):  # rounds of teams on the seasoned Elo-MMR ladder, at their place in time
        players = rng.sample([f"p{i:03d}" for i in range(24)], 4)
        at = rng.randrange(ROUNDS)
        out.insert(at + k, {"round_id": f"team{k}", "ladder": "s", "occurred_at": out[at + k]["occurred_at"] + 1,
                            "standings": [{"team": "red", "players": players[:2], "rank": 1},
                                          {"team": "blue", "players": players[2:], "rank": 2}]})
    return out


def replay(published: list[dict], tmp_path: Path, ladders: dict) -> dict[tuple[str, str], tuple[float, float, int]]:
    import csv

    from typer.testing import CliRunner

    from stream.cli.main import app

    source, output = tmp_path / "rounds.jsonl", tmp_path / "ratings.csv"
    source.write_text("".join(json.dumps(r) + "\n" for r in published))
    result = CliRunner().invoke(app, ["replay", str(source), "--ladders", json.dumps(ladders), "--output", str(output)])
    assert result.exit_code == 0, result.output
    with output.open() as fh:
        return {(row["ladder"], row["player"]): (float(row["mu"]), float(row["sigma"]), int(row["rounds"]))
                for row in csv.DictReader(fh)}


def assert_equals_replay(redis_url: str, published: list[dict],
                         tmp_path: Path) -> dict[tuple[str, str], tuple[float, float, int]]:
    """Redis (every player of the three ladders) equals ``stream replay --ladders`` within 1e-9."""
    want = replay(published, tmp_path, LADDERS)
    got = stored(redis_url, {"s", "x", "plain"})
    assert set(got) == set(want)
    for key, (mu, sigma, n) in got.items():
        assert abs(mu - want[key][0]) <= harness.TOLERANCE and abs(sigma - want[key][1]) <= harness.TOLERANCE, key
        assert n == want[key][2], key
    return got


def test_seasons_through_the_real_pipeline(local_stack, stack_redis_url: str, fresh_prefix: str,
                                           tmp_path: Path) -> None:
    published = sorted(rounds(), key=lambda r: r["occurred_at"])
    env = harness.worker_env(local_stack.bootstrap, stack_redis_url, fresh_prefix, partitions=4,
                             LADDERS=json.dumps(LADDERS), PHASE_ONE_BATCH="16")
    from stream.pipeline.topics import ensure
    from stream.settings import Settings
    ensure(Settings.from_env(env))
    workers = [harness.Worker(env, tmp_path / f"worker{i}.log").start() for i in range(2)]
    try:
        harness.publish(local_stack.bootstrap, f"{fresh_prefix}rounds", published)
        harness.wait_drained(stack_redis_url, harness.expected_rounds(published), workers)
    finally:
        harness.stop_workers(workers)
    got = assert_equals_replay(stack_redis_url, published, tmp_path)
    # the resets happened: the seasoned ladders differ from the same history without seasons,
    # the ladder without a schedule does not
    unseasoned = replay(published, tmp_path, {"s": {"model": "mmr-bounded"}, "x": {"model": "mmx"},
                                              "*": {"model": "mmr-bounded"}})
    for ladder in ("s", "x"):
        moved = [k for k in got if k[0] == ladder and abs(got[k][1] - unseasoned[k][1]) > 1e-6]
        assert len(moved) >= 10, ladder
    assert all(abs(got[k][0] - unseasoned[k][0]) <= harness.TOLERANCE for k in got if k[0] == "plain")
