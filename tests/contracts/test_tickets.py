"""Matchmaking's contracts: tickets validated (reasons of the dead-letter schema), match ids
deterministic whatever the tickets' order, matches and ticket events valid against their schemas."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.contracts import REASONS, Limits, RoundRejected, load_schema, validate
from stream.contracts.tickets import (MATCHED, STATUSES, Match, TicketCancel, TicketEvent, TicketJoin, check_party,
                                      match_id, matched_events_json, parse_ticket)

LIMITS = Limits(max_id_length=16)


def test_a_join_and_a_cancel() -> None:
    join = parse_ticket(json.dumps({"ticket_id": "t1", "queue": "duel", "players": ["a", "b"],
                                    "latencies": {"eu": 20}, "created_at": 5}), limits=LIMITS)
    assert join == TicketJoin("t1", "duel", ("a", "b"), {"eu": 20.0}, 5.0)
    assert parse_ticket(join.to_json(), limits=LIMITS) == join
    cancel = parse_ticket(b'{"ticket_id": "t1", "queue": "duel", "cancel": true}', limits=LIMITS)
    assert cancel == TicketCancel("t1", "duel")
    validate("match-ticket", json.loads(cancel.to_json()))


@pytest.mark.parametrize("raw, reason, field", [
    (b"\xff", "not_utf8", None),
    (b"{", "not_json", None),
    (b"[]", "bad_ticket", None),
    (b'{"ticket_id": "t", "queue": "duel"}', "bad_ticket", None),  # neither a join nor a cancel
    (b'{"ticket_id": "t", "queue": "duel", "players": ["a"], "cancel": true}', "bad_ticket", None),
    (b'{"ticket_id": "t", "queue": "duel", "players": []}', "bad_ticket", "players"),
    (b'{"ticket_id": "t", "queue": "d uel", "players": ["a"]}', "bad_ticket", "queue"),
    (b'{"ticket_id": "t", "queue": "duel", "players": ["a"], "latencies": {"eu": -1}}', "bad_ticket", "latencies.eu"),
    (b'{"ticket_id": "t", "queue": "duel", "players": ["a", "a"]}', "bad_party", "players"),
    (b'{"ticket_id": "t", "queue": "duel", "players": ["aaaaaaaaaaaaaaaaaaaa"]}', "id_too_long", "players.0"),
    (b'{"ticket_id": "tttttttttttttttttttttt", "queue": "duel", "cancel": true}', "id_too_long", "ticket_id"),
])
def test_bad_tickets_are_rejected_with_a_dead_letter_reason(raw: bytes, reason: str, field: str | None) -> None:
    with pytest.raises(RoundRejected) as info:
        parse_ticket(raw, limits=LIMITS)
    assert info.value.reason == reason and info.value.field == field
    assert reason in REASONS and reason in load_schema("dead-letter")["properties"]["reason"]["enum"]


def test_the_queue_and_its_team_size() -> None:
    join = TicketJoin("t", "duel", ("a", "b"))
    with pytest.raises(RoundRejected) as info:
        check_party(join, queues={"duel": 1})
    assert info.value.reason == "bad_party"
    with pytest.raises(RoundRejected) as info:
        check_party(join, queues={"v5": 5})
    assert info.value.reason == "unknown_queue"
    check_party(join, queues={"duel": 2})


@settings(deadline=None)  # no wall-time assertion (a loaded machine)
@given(st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=8, unique=True), st.randoms())
def test_match_id_is_the_same_whatever_the_order(tickets: list[str], rnd) -> None:
    shuffled = list(tickets)
    rnd.shuffle(shuffled)
    assert match_id("q", tickets) == match_id("q", shuffled)
    assert match_id("q", tickets) != match_id("other", tickets)
    assert match_id("q", tickets) != match_id("q", [*tickets, "\x00extra"])


def test_events_validate_against_their_schemas() -> None:
    match = Match("m-1", "duel", "duel", [["a"], ["b"]], ["t1", "t2"], 0.8, [0.55, 0.45], {"t1": 1.5, "t2": 0.2},
                  1_700_000_000.25)
    validate("match", match.to_json())
    assert Match.from_json(match.to_json()) == match
    for status in STATUSES:
        event = TicketEvent("t1", "duel", status, 1.5, 1_700_000_000.5, "m-1" if status == "matched" else None,
                            "waiting" if status == "rejected" else None, ["a"])
        validate("ticket-event", event.to_json())
        assert TicketEvent.from_json(event.to_json()) == event


def test_a_number_that_is_not_finite_is_refused() -> None:
    with pytest.raises(ValueError):
        Match("m", "q", "l", [["a"], ["b"]], ["t"], float("nan"), [0.5, 0.5], {"t": 1.0}, 1.0).to_json()
    with pytest.raises(ValueError):
        TicketEvent("t", "q", "matched", float("inf"), 1.0).to_json()


_ids = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_ids, st.floats(0, 1e6, allow_nan=False), st.lists(_ids, min_size=1, max_size=4)),
                min_size=1, max_size=8),
       _ids, st.floats(0, 2e9, allow_nan=False))
def test_matched_events_json_equals_encoding_each_event(rows: list[tuple[str, float, list[str]]], queue: str,
                                                        at: float) -> None:
    tickets, waits, parties = [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
    mid = match_id(queue, tickets)
    assert matched_events_json(queue, mid, at, tickets, waits, parties) == \
        [TicketEvent(t, queue, MATCHED, w, at, mid, None, p).to_json() for t, w, p in rows]


def test_matched_events_json_refuses_a_number_that_is_not_finite() -> None:
    with pytest.raises(ValueError):
        matched_events_json("q", "m-1", 10.0, ["a", "b"], [1.0, float("nan")], [["x"], ["y"]])
    with pytest.raises(ValueError):
        matched_events_json("q", "m-1", float("inf"), ["a"], [1.0], [["x"]])
