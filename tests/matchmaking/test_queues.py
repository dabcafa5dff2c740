"""QUEUES: parsed into QueueConfig, every bad key named in the error."""

from __future__ import annotations

import json
import math

import pytest

from stream.matchmaking import QueueConfig, WideningStep, parse_queues


def test_parse_defaults_and_shapes() -> None:
    queues = parse_queues(json.dumps({
        "duel": {"ladder": "chess", "teams": 2, "team_size": 1},
        "ffa8": {"ladder": "chess", "teams": 8, "team_size": 1, "max_wait_s": 120},
        "5v5": {"ladder": "moba", "teams": 2, "team_size": 5, "max_latency_ms": 80,
                "widening": [{"after_s": 0, "max_gap": 50, "min_quality": 0.95}, {"after_s": 20, "max_gap": None}]},
        "lobby": {"ladder": "br", "teams": 1, "team_size": 64, "top_rating": 2400, "top_max_gap": 150},
    }))
    assert queues["duel"] == QueueConfig(name="duel", ladder="chess")
    assert queues["ffa8"].players == 8 and queues["ffa8"].max_wait_s == 120.0
    five = queues["5v5"]
    assert five.players == 10 and not five.singles and five.max_latency_ms == 80.0
    assert five.widening == (WideningStep(0.0, 50.0, 0.95), WideningStep(20.0, math.inf, 0.0))
    assert five.step(19.9).max_gap == 50.0 and five.step(20.0).max_gap == math.inf
    assert queues["lobby"].top_rating == 2400.0 and queues["lobby"].top_max_gap == 150.0
    assert parse_queues("") == {} and parse_queues("  ") == {}


@pytest.mark.parametrize("entry, message", [
    ({"ladder": "x", "team_size": 0}, 'QUEUES["q"].team_size: must be an integer >= 1'),
    ({"ladder": "x", "teams": 1.5}, 'QUEUES["q"].teams: must be an integer >= 1'),
    ({"ladder": "x", "teams": True}, 'QUEUES["q"].teams: must be an integer >= 1'),
    ({"ladder": "x", "teams": 1, "team_size": 1}, 'QUEUES["q"].team_size: a match needs at least 2 players'),
    ({"ladder": "x", "colour": "red"}, "QUEUES[\"q\"]: unknown key 'colour'"),
    ({"teams": 2}, 'QUEUES["q"].ladder: must be a ladder name'),
    ({"ladder": "x", "max_wait_s": 0}, 'QUEUES["q"].max_wait_s: must be > 0'),
    ({"ladder": "x", "max_wait_s": "60"}, 'QUEUES["q"].max_wait_s: must be a number'),
    ({"ladder": "x", "widening": []}, 'QUEUES["q"].widening: must be a non-empty list'),
    ({"ladder": "x", "widening": [{"after_s": 5, "max_gap": 1}]}, 'QUEUES["q"].widening[0].after_s: the first step must start at 0'),
    ({"ladder": "x", "widening": [{"after_s": 0, "max_gap": 1}, {"after_s": 0, "max_gap": 2}]},
     'QUEUES["q"].widening[1].after_s: steps must start in increasing order'),
    ({"ladder": "x", "widening": [{"after_s": 0, "gap": 1}]}, "QUEUES[\"q\"].widening[0]: unknown key 'gap'"),
    ({"ladder": "x", "widening": [{"after_s": 0}]}, 'QUEUES["q"].widening[0].max_gap: missing'),
    ({"ladder": "x", "widening": [{"after_s": 0, "max_gap": 1, "min_quality": 2}]}, 'QUEUES["q"].widening[0].min_quality: must be <= 1'),
    ({"ladder": "x", "provisional_gap_factor": 0.5}, 'QUEUES["q"].provisional_gap_factor: must be >= 1'),
    ({"ladder": "x", "max_latency_ms": -1}, 'QUEUES["q"].max_latency_ms: must be > 0'),
    ({"ladder": "x", "top_rating": "high"}, 'QUEUES["q"].top_rating: must be a number or null'),
    ({"ladder": "x", "teams": 2, "team_size": 600}, 'QUEUES["q"].team_size: teams x team_size must be <= 1024'),
    ("duel", 'QUEUES["q"]: must be an object'),
])
def test_bad_entries_name_their_key(entry: object, message: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_queues(json.dumps({"q": entry}))
    assert message in str(err.value)


def test_bad_documents() -> None:
    with pytest.raises(ValueError, match="QUEUES: not JSON"):
        parse_queues("{")
    with pytest.raises(ValueError, match="QUEUES: must be a JSON object"):
        parse_queues("[1]")
    with pytest.raises(ValueError, match=r'QUEUES\["bad name"\]: not a queue name'):
        parse_queues(json.dumps({"bad name": {"ladder": "x"}}))
