"""What-if under hostile bodies: never a 500, never a write, only read-only Redis commands (the
read API may run as the reader ACL user, which runs no scripts); and the reader user answers it."""

from __future__ import annotations

import json
from urllib.parse import quote

import readside_data
from test_api_hostile_input import HOSTILE, executed_commands, send_all, write_commands
from whatif_data import LADDER, PLAYERS, seed_states, snapshot


def bodies(value: str) -> list[bytes]:
    """What-if bodies with ``value`` in every position a body can hold it, and broken bodies."""
    good = [{"player": p, "rank": i + 1} for i, p in enumerate(PLAYERS[:3])]
    return [json.dumps(b).encode() for b in (
        {"standings": [*good, {"player": value, "rank": 4}]},
        {"standings": good, "round_id": value},
        {"standings": good, "ladder": value},
        {"standings": good, "occurred_at": value},
        {"standings": good, "weight": value},
        {"standings": good, "explain_for": [value]},
        {"standings": [{"team": value, "players": [PLAYERS[0], value], "rank": 1}, {"player": PLAYERS[1], "rank": 2}]},
        {"standings": [{"player": PLAYERS[0], "rank": value}, {"player": PLAYERS[1], "rank": 2}]},
        {"standings": value},
        {value: 1, "standings": good},
    )] + [value.encode("utf-8", "surrogatepass"), b"", b"null", b"[]", b'{"standings": [' * 200]


def test_hostile_what_if_bodies_never_500_and_never_write(redis_url: str) -> None:
    readside_data.seed(redis_url)
    seed_states(redis_url)
    before = snapshot(redis_url)
    results = send_all(redis_url, ((value, "POST", f"/api/ladders/{ladder}/what-if", body) for value in HOSTILE
                                   for ladder in (LADDER, quote(value, safe="")) for body in bodies(value)))
    assert snapshot(redis_url) == before, "a what-if changed the keyspace"
    commands = executed_commands(redis_url)
    assert write_commands(redis_url, commands) == set(), commands
    assert [(v, status) for v, status, _ in results if status >= 500] == []
    assert all(body is not None for _, _, body in results)  # every answer is JSON
    for value, status, body in results:
        assert 200 <= status < 300 or (400 <= status < 500 and set(body) == {"error", "message"}), (value, status, body)
    assert any(status == 200 for _, status, _ in results)  # hostile ids are ids like any other
