"""Emitted events: JSON round trips, schema validity, and the schema files themselves."""

from __future__ import annotations

import json

import jsonschema
import pytest

from stream.contracts.schemas import SCHEMA_VERSIONS
from stream.contracts import (
    SCHEMA_NAMES, DeadLetter, PlayerUpdate, RatingChange, RoundRejected, SchemaError, load_schema,
    validate,
)
from tests.contracts.wire_oracle import entries as update_entries, letter_from_json, to_dict


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_schema_files_are_valid_draft_2020_12(name: str) -> None:
    schema = load_schema(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith(f"/{name}.{SCHEMA_VERSIONS.get(name, 'v1')}.json")
    jsonschema.Draft202012Validator.check_schema(schema)


def rating_change(**overrides: object) -> RatingChange:
    values: dict[str, object] = dict(
        ladder="blitz", round_id="r1", player="ann", rank=1, field_size=3, performance=1712.25,
        mu_before=1500.0, sigma_before=350.0, mu_after=1601.0000000001, sigma_after=210.5,
        display_rating=1180.5, tier=None, rounds_played=1, occurred_at=1.7e9,
    )
    values.update(overrides)
    return RatingChange(**values)  # type: ignore[arg-type]


def test_rating_change_round_trip_and_schema() -> None:
    event = rating_change()
    text = event.to_json()
    validate("rating-change", text)
    data = json.loads(text)
    assert data["event_id"] == "blitz/r1/ann"
    assert RatingChange.from_json(text) == event
    validate("rating-change", to_dict(rating_change(tier="gold")))
    jsonschema.validate(data, load_schema("rating-change"))


def test_rating_change_schema_rejects_missing_and_bad_fields() -> None:
    data = to_dict(rating_change())
    del data["mu_after"]
    with pytest.raises(SchemaError):
        validate("rating-change", data)
    with pytest.raises(SchemaError):
        validate("rating-change", {**to_dict(rating_change()), "rank": 0})


def test_rating_change_refuses_nan() -> None:
    with pytest.raises(ValueError):
        rating_change(performance=float("nan")).to_json()


def test_player_update_round_trip_and_schema() -> None:
    update = PlayerUpdate(ladder="blitz", round_id="r1", seq=4, occurred_at=1.7e9, weight=1.0, field_size=3,
                          players=["ann", "cy"], ranks=[1, 2], performances=[1700.125, 1450.0])
    text = update.to_json()
    validate("player-update", text)
    assert json.loads(text)["entries"][1] == {"player": "cy", "rank": 2, "performance": 1450.0}
    assert PlayerUpdate.from_json(text) == update
    assert [e.player for e in update_entries(update)] == ["ann", "cy"]
    jsonschema.validate(json.loads(text), load_schema("player-update"))


def test_dead_letter_round_trip_and_schema() -> None:
    original = b'{"round_id": \xff}'
    letter = DeadLetter.from_rejection(RoundRejected("not_utf8", "not valid UTF-8 at byte 14"), original,
                                       rejected_at=1.7e9, topic="rounds", partition=0, offset=12)
    text = letter.to_json()
    validate("dead-letter", text)
    again = letter_from_json(text)
    assert again == letter and again.original == original
    validate("dead-letter", DeadLetter("schema", "m", "standings[0]", b"x", 1.0).to_json())
    with pytest.raises(SchemaError):
        validate("dead-letter", {**letter.to_dict(), "reason": "whatever"})


def test_rating_change_v4_team_and_weight() -> None:
    """A change of a round with teams or partial play carries ``team`` (null for an individual
    entry) and ``weight``, both or neither; a plain round's change is a v3 event."""
    from stream.contracts.schemas import schema_path

    v3 = json.loads(schema_path("rating-change", "v3").read_text())
    plain = rating_change()
    assert "team" not in to_dict(plain) and "weight" not in to_dict(plain)
    jsonschema.validate(to_dict(plain), v3)
    for team in ("red", None):
        change = rating_change(team=team, weight=0.25)
        data = json.loads(change.to_json())
        assert (data["team"], data["weight"]) == (team, 0.25) and list(data)[-2:] == ["team", "weight"]
        validate("rating-change", change.to_json())
        assert RatingChange.from_json(change.to_json()) == change
        for missing in ("team", "weight"):
            with pytest.raises(SchemaError):
                validate("rating-change", {k: v for k, v in data.items() if k != missing})
    with pytest.raises(SchemaError):
        validate("rating-change", json.loads(rating_change(team="red", weight=1.5).to_json()))


def test_rating_change_v5_provisional() -> None:
    """``provisional`` is the last member of a v5 event, a boolean; an event without it (stored
    before v5) reads back with None and writes no such key; v4 events stay valid."""
    from stream.contracts.schemas import schema_path

    for flag in (True, False):
        change = rating_change(team="red", weight=0.5, provisional=flag)
        data = json.loads(change.to_json())
        assert list(data)[-1] == "provisional" and data["provisional"] is flag
        validate("rating-change", data)
        assert RatingChange.from_json(change.to_json()) == change
    old = rating_change()
    assert "provisional" not in to_dict(old) and RatingChange.from_json(old.to_json()).provisional is None
    validate("rating-change", to_dict(old))
    v4 = json.loads(schema_path("rating-change", "v4").read_text())
    with pytest.raises(jsonschema.ValidationError):  # v4 has no such member
        jsonschema.validate(to_dict(rating_change(provisional=True)), v4)
    for bad in (1, "yes", None):
        with pytest.raises(SchemaError):
            validate("rating-change", {**to_dict(old), "provisional": bad})


def test_player_update_v2_team_and_weight_and_v1_messages() -> None:
    """PlayerUpdate v2 entries carry ``team`` (only in a team) and ``weight``; a v1 message (no
    such field) parses with ``weights`` None, every weight 1."""
    update = PlayerUpdate(ladder="L", round_id="r", seq=3, occurred_at=1.7e9, weight=1.0, field_size=3,
                          players=["a", "b", "c"], ranks=[1, 1, 2], performances=[1.5, 1.5, 0.5],
                          previous_seqs=[0, 2, 1], teams=["x", "x", None], weights=[1.0, 0.5, 1.0])
    text = update.to_json()
    validate("player-update", text)
    entries = json.loads(text)["entries"]
    assert entries[0] == {"player": "a", "rank": 1, "performance": 1.5, "previous_seq": 0, "team": "x", "weight": 1.0}
    assert entries[2] == {"player": "c", "rank": 2, "performance": 0.5, "previous_seq": 1, "weight": 1.0}
    assert PlayerUpdate.from_json(text) == update
    v1 = {"ladder": "L", "round_id": "r", "seq": 1, "occurred_at": 1.0, "weight": 1.0, "field_size": 2,
          "entries": [{"player": "a", "rank": 1, "performance": 1.0}, {"player": "b", "rank": 2, "performance": 0.0}]}
    validate("player-update", v1)
    old = PlayerUpdate.from_json(v1)
    assert old.weights is None and old.teams is None and [e.weight for e in update_entries(old)] == [None, None]
    with pytest.raises(SchemaError):
        validate("player-update", dict(v1, entries=[dict(v1["entries"][0], weight=0)]))
