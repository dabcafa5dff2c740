"""Team and partial-play standings (round-result v2): parsing, reason codes, canonical form,
v1 rounds still valid, and the raters' support check."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.contracts import REASONS, Limits, RoundRejected, load_schema, parse_round, validate
from stream.contracts.round import INDIVIDUALS_ONLY, Support, check_supported
from stream.contracts.schemas import SCHEMA_DIR
from tests.contracts.verdicts import schema_and_reader

LIMITS = Limits()
TEAMS = [
    {"team": "red", "players": ["ann", {"player": "bob", "weight": 0.5}], "rank": 1},
    {"team": "blue", "players": ["cy", "dee"], "rank": 2},
]


def raw(standings: list[object], **extra: object) -> str:
    return json.dumps({"round_id": "r1", "ladder": "L", "occurred_at": 1.7e9, "standings": standings, **extra})


def rejected(standings: list[object], limits: Limits = LIMITS) -> RoundRejected:
    with pytest.raises(RoundRejected) as info:
        parse_round(raw(standings), limits=limits)
    assert info.value.reason in REASONS
    return info.value


def test_team_round_flattens_to_one_standing_per_player() -> None:
    r = parse_round(raw(TEAMS), limits=LIMITS)
    assert r.players() == ["ann", "bob", "cy", "dee"]
    assert r.ranks().tolist() == [1, 1, 2, 2]
    assert [s.team for s in r.standings] == ["red", "red", "blue", "blue"]
    assert r.player_weights().tolist() == [1.0, 0.5, 1.0, 1.0]
    assert r.has_teams() and r.is_partial() and not r.is_outcome_free(draws_rate=False)
    entry, ranks = r.entries()
    assert entry.tolist() == [0, 0, 1, 1] and ranks.tolist() == [1, 2]


def test_canonical_form_round_trips_and_validates() -> None:
    r = parse_round(raw(TEAMS + [{"player": "eve", "rank": 3, "weight": 0.25}]), limits=LIMITS)
    text = r.to_json()
    validate("round-result", text)
    again = parse_round(text, limits=LIMITS)
    assert again.standings == r.standings and again.content_hash() == r.content_hash()
    assert json.loads(text)["standings"][0] == TEAMS[0]


def test_individual_rounds_keep_their_v1_hash_and_form() -> None:
    r = parse_round(raw([{"player": "a", "rank": 1}, {"player": "b", "rank": 2}]), limits=LIMITS)
    assert not r.has_teams() and not r.is_partial()
    assert r.to_dict()["standings"] == [{"player": "a", "rank": 1}, {"player": "b", "rank": 2}]
    # weight 1 written out is the same round as weight left out
    same = parse_round(raw([{"player": "a", "rank": 1, "weight": 1}, {"player": "b", "rank": 2}]), limits=LIMITS)
    assert same.content_hash() == r.content_hash()
    # a team of the same players is different content
    team = parse_round(raw([{"team": "x", "players": ["a"], "rank": 1}, {"player": "b", "rank": 2}]), limits=LIMITS)
    assert team.content_hash() != r.content_hash()


def test_v1_rounds_are_valid_v2_rounds() -> None:
    v1 = json.loads((SCHEMA_DIR / "round-result.v1.json").read_text())
    v2 = load_schema("round-result")
    assert v2["$id"].endswith("round-result.v2.json")
    for standings in ([{"player": "a", "rank": 1}, {"player": "b", "rank": 2}], ["a", ["b", "c"]]):
        doc = json.loads(raw(standings))
        jsonschema.validate(doc, v1)
        jsonschema.validate(doc, v2)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(json.loads(raw(TEAMS)), v1)
    jsonschema.validate(json.loads(raw(TEAMS)), v2)


@pytest.mark.parametrize(("standings", "reason", "field"), [
    ([{"team": "red", "players": ["a", "b"], "rank": 1}, {"team": "blue", "players": ["b"], "rank": 2}],
     "duplicate_player", "standings[1].players[0]"),
    ([{"team": "red", "players": ["a"], "rank": 1}, {"player": "a", "rank": 2}],
     "duplicate_player", "standings[1].player"),
    ([{"team": "red", "players": [], "rank": 1}, {"player": "b", "rank": 2}], "empty_team", "standings[0].players"),
    ([{"team": "red", "players": ["a"], "rank": 1}, {"team": "red", "players": ["b"], "rank": 2}],
     "duplicate_team", "standings[1].team"),
    ([{"team": "red", "players": [{"player": "a", "weight": 0}], "rank": 1}, {"player": "b", "rank": 2}],
     "bad_player_weight", "standings[0].players[0].weight"),
    ([{"team": "red", "players": [{"player": "a", "weight": 1.5}], "rank": 1}, {"player": "b", "rank": 2}],
     "bad_player_weight", "standings[0].players[0].weight"),
    ([{"player": "a", "rank": 1, "weight": -0.1}, {"player": "b", "rank": 2}], "bad_player_weight",
     "standings[0].weight"),
    ([{"player": "a", "rank": 1, "weight": 2}, {"player": "b", "rank": 2}], "bad_player_weight", "standings[0].weight"),
    ([{"team": "red", "players": ["a"], "rank": 0}, {"player": "b", "rank": 2}], "bad_rank", "standings[0].rank"),
    ([{"team": "", "players": ["a"], "rank": 1}, {"player": "b", "rank": 2}], "schema", "standings[0].team"),
    ([{"team": "red", "players": [7], "rank": 1}, {"player": "b", "rank": 2}], "schema", "standings[0].players[0]"),
])
def test_bad_team_standings_have_a_reason_each(standings: list[object], reason: str, field: str) -> None:
    exc = rejected(standings)
    assert (exc.reason, exc.field) == (reason, field)


def test_strict_mode_rejects_unknown_team_fields() -> None:
    strict = Limits(strict=True)
    exc = rejected([{"team": "red", "players": ["a"], "rank": 1, "colour": 3}, {"player": "b", "rank": 2}], strict)
    assert (exc.reason, exc.field) == ("unknown_field", "standings[0].colour")
    exc = rejected([{"team": "red", "players": [{"player": "a", "x": 1}], "rank": 1}, {"player": "b", "rank": 2}],
                   strict)
    assert (exc.reason, exc.field) == ("unknown_field", "standings[0].players[0].x")
    assert parse_round(raw(TEAMS), limits=strict).has_teams()


def test_a_single_team_is_outcome_free_and_all_teams_tied_is_a_draw() -> None:
    exc = rejected([{"team": "red", "players": ["a", "b"], "rank": 1}])
    assert exc.reason == "no_outcome" and exc.round is not None and exc.round.has_teams()
    drawn = parse_round(raw([{"team": "red", "players": ["a", "b"], "rank": 1},
                             {"team": "blue", "players": ["c", "d"], "rank": 1}]), limits=Limits())
    assert drawn.is_draw() and drawn.entry_count() == 2 and not drawn.is_outcome_free(draws_rate=True)


def test_round_size_counts_players_not_entries() -> None:
    exc = rejected(TEAMS, Limits(max_round_size=3))
    assert exc.reason == "round_too_large"


def test_support_check() -> None:
    teams = parse_round(raw(TEAMS), limits=LIMITS)
    mixed = parse_round(raw([TEAMS[1], {"player": "x", "rank": 1}]), limits=LIMITS)
    partial = parse_round(raw([{"player": "a", "rank": 1, "weight": 0.5}, {"player": "b", "rank": 2}]), limits=LIMITS)
    plain = parse_round(raw([{"player": "a", "rank": 1}, {"player": "b", "rank": 2}]), limits=LIMITS)
    check_supported(plain, INDIVIDUALS_ONLY, "x")
    for r in (teams, mixed, partial):
        with pytest.raises(RoundRejected) as info:
            check_supported(r, INDIVIDUALS_ONLY, "the stream")
        assert info.value.reason == "teams_unsupported"
    with pytest.raises(RoundRejected) as info:
        check_supported(mixed, Support(teams=True, partial=True), "x")
    assert info.value.reason == "mixed_standings"
    check_supported(teams, Support(teams=True, partial=True), "x")
    check_supported(mixed, Support(teams=True, mixed=True, partial=True), "x")


def test_every_reason_is_in_the_dead_letter_schema() -> None:
    assert set(load_schema("dead-letter")["properties"]["reason"]["enum"]) >= set(REASONS)


def test_an_entry_with_player_is_an_individual_whatever_else_it_has() -> None:
    r = parse_round(raw([{"player": "a", "rank": 1, "players": ["x"]}, {"player": "b", "rank": 2, "weight": 0.5}]),
                    limits=LIMITS)
    assert r.players() == ["a", "b"] and not r.has_teams() and r.is_partial()
    exc = rejected([{"player": "a", "rank": 1, "players": ["x"]}, {"player": "b", "rank": 2}], Limits(strict=True))
    assert (exc.reason, exc.field) == ("unknown_field", "standings[0].players")
    exc = rejected([{"player": "a", "rank": 1, "players": ["x"], "weight": 1}, {"player": "a", "rank": 2}])
    assert (exc.reason, exc.field) == ("duplicate_player", "standings[1].player")


_ids = st.sampled_from(["a", "b", "c", "d", ""])
_weights = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-1, 2), st.booleans(),
                     st.just("0.5"), st.just(None), st.sampled_from([0.5, 1.0, 1e-3]))
_members = st.one_of(_ids, st.integers(0, 1), st.fixed_dictionaries({"player": _ids}, optional={"weight": _weights}))
_entries = st.one_of(
    st.fixed_dictionaries({"player": _ids, "rank": st.one_of(st.integers(0, 3), st.just(1.0), st.just("1"))},
                          optional={"weight": _weights}),
    st.fixed_dictionaries({"team": st.one_of(_ids, st.integers(0, 1)), "players": st.one_of(st.lists(_members, max_size=3),
                                                                                           st.just("a")),
                           "rank": st.one_of(st.integers(0, 3), st.just(True))}),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_entries, min_size=1, max_size=4))
def test_team_rules_are_the_schemas(entries: list[object]) -> None:
    """On any mix of entries, good and bad, ``parse_round`` refuses the standings by the schema's rules
    exactly when ``schemas/round-result.v2.json`` refuses them."""
    refuses, reader_refuses = schema_and_reader(raw(entries), LIMITS)
    assert refuses == reader_refuses
