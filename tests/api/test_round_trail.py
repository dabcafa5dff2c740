"""Issue 29 item 7: a corrected round's trail (each correction's id, kind, time, reason) and marks are
in the read API's round answer (the CLI's and the dashboard's round pages show them)."""

from __future__ import annotations

import json

import pytest
import redis

from apiclient import get_all
from readside_data import LADDER, Seeded, seed
from stream.store import keys


@pytest.fixture()
def seeded(redis_url: str) -> Seeded:
    return seed(redis_url)


def test_the_round_answer_carries_the_correction_trail(redis_url: str, seeded: Seeded) -> None:
    client = redis.Redis.from_url(redis_url)
    trail = [{"id": "c-1", "kind": "amend", "at": 1700000000.5}, {"id": "c-2", "kind": "void", "at": 1700000100.0,
                                                                  "reason": "cheater"}]
    client.hset(keys.round_record(LADDER, "r1"), mapping={"corrections": json.dumps(trail), "voided_by": "c-2",
                                                          "amended_by": "c-1", "status": "voided"})
    client.close()
    (status, voided), (ok, plain) = get_all(redis_url, [f"/api/ladders/{LADDER}/rounds/r1",
                                                        f"/api/ladders/{LADDER}/rounds/r2"])
    assert (status, ok) == (200, 200)
    record = voided["record"]
    assert record["status"] == "voided" and record["corrections"] == trail
    assert (record["voided_by"], record["amended_by"], record["inserted_by"]) == ("c-2", "c-1", None)
    assert plain["record"]["corrections"] == [] and plain["record"]["voided_by"] is None
