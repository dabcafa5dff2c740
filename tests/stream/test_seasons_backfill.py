"""Backfill with seasons writes what the stream writes: a history crossing two season starts
(soft reset, placement) streamed round by round into one Redis database and backfilled into
another leaves the same keys byte for byte (states, tiers with "Placement k", histories)."""

from __future__ import annotations

import json

from stream.engine.season_schedule import iso_time
from tests.stream import pipeline_harness as harness
from tests.stream.redis_dump import differences
from tests.stream.test_backfill import history, stream_and_backfill

SEASONS = {"schedule": [{"name": "S1", "start": iso_time(harness.BASE_TIME + 8 * harness.DAY_S)},
                        {"name": "S2", "start": iso_time(harness.BASE_TIME + 20 * harness.DAY_S)}],
           "sigma_to": 240.0, "sigma_share": 0.8, "mu_pull": 0.25, "placement_rounds": 3}
LADDERS = json.dumps({"alpha": {"model": "mmr-bounded", "seasons": SEASONS, "display": {"divisions": 2}},
                      "beta": {"model": "mmx", "seasons": SEASONS}})


def test_backfill_with_seasons_writes_what_the_stream_writes(redis_url: str) -> None:
    rounds = history(seed=32, count=120)  # a quarter of a day apart: 30 days, both starts crossed
    stream_state, backfill_state = stream_and_backfill(redis_url, rounds, ladders=LADDERS)
    assert differences(stream_state, backfill_state) == []
    tiers = [h.get(b"tier") for k, h in stream_state.items() if k.startswith(b"ems:player:") and isinstance(h, dict)]
    assert any(t and t.startswith(b"Placement ") for t in tiers)  # players still in placement at the end
