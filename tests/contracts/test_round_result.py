"""parse_round: every reason code, both standings forms, time formats, canonical form."""

from __future__ import annotations

import hashlib
import json
import math

import pytest

from stream.contracts import REASONS, Limits, RoundRejected, RoundResult, Standing, parse_round, validate
from tests.contracts.wire_oracle import letter_from_json, truncated
from tests.contracts.verdicts import schema_and_reader

LIMITS = Limits()


def round_dict(**overrides: object) -> dict[str, object]:
    base: dict[str, object] = {
        "round_id": "r1",
        "ladder": "blitz",
        "occurred_at": 1_700_000_000,
        "standings": [{"player": "ann", "rank": 1}, {"player": "bob", "rank": 2}, {"player": "cy", "rank": 2}],
    }
    base.update(overrides)
    return base


def rejection(raw: object, limits: Limits = LIMITS) -> RoundRejected:
    with pytest.raises(RoundRejected) as info:
        parse_round(raw if isinstance(raw, (bytes, str)) else json.dumps(raw), limits=limits)  # type: ignore[arg-type]
    assert info.value.reason in REASONS
    return info.value


def test_valid_explicit_round() -> None:
    r = parse_round(json.dumps(round_dict()).encode(), limits=LIMITS)
    assert r.round_id == "r1" and r.ladder == "blitz" and r.occurred_at == 1_700_000_000.0
    assert r.players() == ["ann", "bob", "cy"]
    assert r.ranks().tolist() == [1, 2, 2]
    assert r.weight == 1.0 and r.perf_ceiling == math.inf and r.field_size == 3


def test_finishing_order_with_tie_groups_uses_competition_ranking() -> None:
    r = parse_round(round_dict(standings=["a", ["b", "c"], "d"]), limits=LIMITS)
    assert [(s.player, s.rank) for s in r.standings] == [("a", 1), ("b", 2), ("c", 2), ("d", 4)]


def test_defaults_and_rfc3339_time() -> None:
    data = round_dict(occurred_at="2024-05-01T12:00:00+02:00")
    del data["ladder"]
    r = parse_round(data, limits=LIMITS)
    assert r.ladder == "default"
    assert r.occurred_at == 1714557600.0
    assert parse_round(round_dict(occurred_at="2024-05-01t10:00:00.5z"), limits=LIMITS).occurred_at == 1714557600.5


def test_canonical_json_round_trips_and_validates() -> None:
    r = parse_round(round_dict(weight=0.5, perf_ceiling=2500), limits=LIMITS)
    text = r.to_json()
    validate("round-result", text)
    again = parse_round(text, limits=Limits())
    assert again == r and again.content_hash() == r.content_hash()
    assert parse_round(round_dict(weight=0.7), limits=LIMITS).content_hash() != r.content_hash()


def test_not_utf8_and_not_json() -> None:
    assert rejection(b'{"round_id": "\xff"}').reason == "not_utf8"
    err = rejection(b'{"round_id": ')
    assert err.reason == "not_json" and "line 1" in err.message


def test_message_too_large() -> None:
    raw = json.dumps(round_dict()).encode()
    assert rejection(raw, Limits(max_message_bytes=len(raw) - 1)).reason == "message_too_large"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ([1, 2], None),
        ({"occurred_at": 1, "standings": ["a", "b"]}, "round_id"),
        (round_dict(round_id=7), "round_id"),
        (round_dict(standings="ann"), "standings"),
        (round_dict(standings=["a", 5]), "standings[1]"),
        (round_dict(standings=["a", []]), "standings[1]"),
        (round_dict(standings=["a", {"player": "b", "rank": 2}]), "standings[1]"),
        (round_dict(standings=[{"player": "a", "rank": 1}, {"rank": 2}]), "standings[1].player"),
        (round_dict(occurred_at="yesterday"), "occurred_at"),
        (round_dict(occurred_at="2024-05-01T12:00:00"), "occurred_at"),
        (round_dict(occurred_at=True), "occurred_at"),
        (round_dict(perf_ceiling="high"), "perf_ceiling"),
    ],
)
def test_schema_violations_name_the_field(data: object, field: str | None) -> None:
    err = rejection(data)
    assert (err.reason, err.field) == ("schema", field)


def test_unknown_fields_only_in_strict_mode() -> None:
    data = round_dict(extra=1)
    assert parse_round(data, limits=LIMITS).round_id == "r1"
    err = rejection(data, Limits(strict=True))
    assert (err.reason, err.field) == ("unknown_field", "extra")
    nested = round_dict(standings=[{"player": "a", "rank": 1, "team": "x"}, {"player": "b", "rank": 2}])
    err = rejection(nested, Limits(strict=True))
    assert (err.reason, err.field) == ("unknown_field", "standings[0].team")


@pytest.mark.parametrize("standings", [[], ["solo"], [{"team": "t", "players": ["a", "b"], "rank": 1}]])
def test_no_outcome_carries_the_parsed_round(standings: list[object]) -> None:
    err = rejection(round_dict(standings=standings))
    assert err.reason == "no_outcome"
    assert err.round is not None and err.round.round_id == "r1"
    assert err.round.is_outcome_free(draws_rate=True) and err.round.is_outcome_free(draws_rate=False)


@pytest.mark.parametrize("standings", [[{"player": "a", "rank": 3}, {"player": "b", "rank": 3}], [["a", "b", "c"]],
                                       [{"team": "x", "players": ["a", "b"], "rank": 1},
                                        {"team": "y", "players": ["c", "d"], "rank": 1}]])
def test_a_draw_parses_and_its_ladders_model_decides(standings: list[object]) -> None:
    """Two entries or more all tied: a draw, rated where the model's ``draws_rate`` says so."""
    round_ = parse_round(round_dict(standings=standings), limits=LIMITS)
    assert round_.is_draw() and round_.entry_count() >= 2
    assert not round_.is_outcome_free(draws_rate=True) and round_.is_outcome_free(draws_rate=False)


@pytest.mark.parametrize(
    ("standings", "field"),
    [(["a", "b", "a"], "standings[2]"), (["a", ["b", "a"]], "standings[1][1]"),
     ([{"player": "a", "rank": 1}, {"player": "a", "rank": 2}], "standings[1].player")],
)
def test_duplicate_player(standings: list[object], field: str) -> None:
    err = rejection(round_dict(standings=standings))
    assert (err.reason, err.field) == ("duplicate_player", field)


@pytest.mark.parametrize("rank", [0, -1, 1.5, "1", None, True, 2**60])
def test_bad_rank(rank: object) -> None:
    err = rejection(round_dict(standings=[{"player": "a", "rank": 1}, {"player": "b", "rank": rank}]))
    assert (err.reason, err.field) == ("bad_rank", "standings[1].rank")


def test_bad_rank_infinity_literal() -> None:
    raw = '{"round_id":"r","occurred_at":1,"standings":[{"player":"a","rank":1},{"player":"b","rank":Infinity}]}'
    assert rejection(raw).reason == "bad_rank"


def test_integral_float_rank_is_accepted() -> None:
    r = parse_round(round_dict(standings=[{"player": "a", "rank": 1.0}, {"player": "b", "rank": 2}]), limits=LIMITS)
    assert r.ranks().tolist() == [1, 2] and isinstance(r.standings[0].rank, int)


@pytest.mark.parametrize("raw_weight", ["0", "-1", "NaN", "Infinity", '"2"', "true"])
def test_bad_weight(raw_weight: str) -> None:
    raw = '{"round_id":"r","occurred_at":1,"standings":["a","b"],"weight":' + raw_weight + "}"
    err = rejection(raw)
    assert (err.reason, err.field) == ("bad_weight", "weight")


def test_id_too_long() -> None:
    limits = Limits(max_id_length=8)
    assert (rejection(round_dict(round_id="r" * 9), limits).field) == "round_id"
    err = rejection(round_dict(standings=["a", "p" * 9]), limits)
    assert (err.reason, err.field) == ("id_too_long", "standings[1]")
    assert rejection(round_dict(ladder="l" * 9), limits).reason == "id_too_long"


def test_round_too_large() -> None:
    limits = Limits(max_round_size=3)
    assert rejection(round_dict(standings=["a", "b", "c", "d"]), limits).reason == "round_too_large"
    err = rejection(round_dict(standings=["a", ["b", "c", "d"]]), limits)
    assert (err.reason, err.field) == ("round_too_large", "standings")


@pytest.mark.parametrize("ladder", ["", "-x", "has space", "a/b", "x" * 65, "é"])
def test_bad_ladder(ladder: str) -> None:
    err = rejection(round_dict(ladder=ladder), Limits(max_id_length=1000))
    assert (err.reason, err.field) == ("bad_ladder", "ladder")


def test_good_ladder_names() -> None:
    for ladder in ("a", "EU-west_1", "game:mode.v2", "9" * 64):
        assert parse_round(round_dict(ladder=ladder), limits=LIMITS).ladder == ladder


def test_limits_from_settings() -> None:
    from stream.settings import Settings

    s = Settings.from_env({"MAX_ROUND_SIZE": "5", "STRICT_SCHEMA": "true", "MAX_ID_LENGTH": "9"})
    assert Limits.from_settings(s) == Limits(max_round_size=5, max_message_bytes=s.max_message_bytes,
                                             max_id_length=9, strict=True)


BIG = "1" + "0" * 400
STALLING = [  # (raw JSON fragment substituted into a valid round, reason, field): each stalled a partition before
    ('"occurred_at": %s' % BIG, "bad_number", "occurred_at"),
    ('"occurred_at": -%s' % BIG, "bad_number", "occurred_at"),
    ('"occurred_at": 1e300', "bad_number", "occurred_at"),
    ('"occurred_at": 1, "weight": %s' % BIG, "bad_weight", "weight"),
    ('"occurred_at": 1, "weight": 1e6', "bad_weight", "weight"),
    ('"occurred_at": 1, "weight": 100.5', "bad_weight", "weight"),
    ('"occurred_at": 1, "weight": 5e-324', "bad_weight", "weight"),
    ('"occurred_at": 1, "weight": 1e-7', "bad_weight", "weight"),
    ('"occurred_at": 1, "perf_ceiling": -%s' % BIG, "bad_number", "perf_ceiling"),
    ('"occurred_at": 1, "perf_ceiling": -1e400', "bad_number", "perf_ceiling"),
    ('"occurred_at": 1, "perf_ceiling": Infinity', "bad_number", "perf_ceiling"),
    ('"occurred_at": 1, "perf_ceiling": NaN', "bad_number", "perf_ceiling"),
    ('"occurred_at": 1%s' % ("0" * 5000), "bad_number", None),
]


@pytest.mark.parametrize(("fragment", "reason", "field"), STALLING)
def test_numbers_that_raised_later_are_rejected_at_acceptance(fragment: str, reason: str, field: str | None) -> None:
    raw = '{"round_id": "r1", %s, "standings": ["a", "b"]}' % fragment
    got = rejection(raw)
    assert (got.reason, got.field) == (reason, field), got
    assert len(got.message) < 300, "an offending number is not echoed whole"


@pytest.mark.parametrize(("raw", "field"), [
    ('{"round_id": "r\\ud800", "occurred_at": 1, "standings": ["a", "b"]}', "round_id"),
    ('{"round_id": "r1", "occurred_at": 1, "standings": ["a", ["b", "\\udfff"]]}', "standings[1][1]"),
    ('{"round_id": "r1", "occurred_at": 1, "standings": [{"player": "a", "rank": 1}, {"player": "x\\udbff", "rank": 2}]}',
     "standings[1].player"),
])
def test_lone_surrogates_in_ids_are_not_utf8(raw: str, field: str) -> None:
    got = rejection(raw)
    assert (got.reason, got.field) == ("not_utf8", field)


def test_weight_bound_is_configurable_and_stored_rounds_ignore_tightened_limits() -> None:
    from stream.contracts.round import STORED

    raw = round_dict(weight=500.0, round_id="r" * 200, extra=1)
    assert rejection(raw).reason == "id_too_long"
    assert rejection(raw, Limits(max_id_length=300)).reason == "bad_weight"
    strict = Limits(max_id_length=300, max_weight=1000.0, strict=True)
    assert rejection(raw, strict).reason == "unknown_field"
    assert parse_round(json.dumps(raw), limits=STORED).weight == 500.0  # accepted before: re-read as is


def test_dead_letter_is_cut_to_fit_with_the_length_and_hash_of_the_whole() -> None:
    import base64
    import hashlib

    from stream.contracts import DeadLetter

    original = bytes(range(256)) * 4000  # ~1 MB, not UTF-8
    letter = DeadLetter("not_utf8", "not valid UTF-8 at byte 128", None, original, 1.0, "rounds", 0, 5)
    whole = json.loads(letter.to_json())
    assert base64.b64decode(whole["original"]) == original and whole["original_length"] == len(original)
    for limit in (100_000, 4_096, 600):
        text = letter.to_json(max_bytes=limit)
        assert len(text.encode()) <= limit
        validate("dead-letter", text)
        cut = letter_from_json(text)
        assert truncated(cut) and original.startswith(cut.original) and len(text.encode()) > limit - 8  # tight
        assert cut.original_length == len(original)
        assert cut.original_sha256 == hashlib.sha256(original).hexdigest()


def test_nesting_is_bounded_whoever_parses() -> None:
    """Beyond MAX_NESTING levels a round is not_json however deep the caller's stack is (the
    decoder's own limit depends on it); up to it, unknown fields may nest."""
    from stream.contracts.round import MAX_NESTING

    def with_extra(depth: int) -> str:  # the "extra" value is at depth 2
        return '{"round_id": "r1", "occurred_at": 1, "standings": ["a", "b"], "extra": %s}' % (
            "[" * (depth - 1) + "]" * (depth - 1))

    assert parse_round(with_extra(MAX_NESTING), limits=LIMITS).round_id == "r1"
    for depth in (MAX_NESTING + 1, 900, 5_000):
        assert rejection(with_extra(depth)).reason == "not_json"


def test_nesting_inside_an_entry_is_bounded_whatever_the_entry() -> None:
    """An unknown field of a standings entry nests at most MAX_NESTING levels too (the round is at level 1,
    the standings 2, the entry 3), whether or not the entry is of the common exact form."""
    from stream.contracts.round import MAX_NESTING

    for rank in ("1", "1.0"):
        def entry(depth: int) -> str:
            deep = "[" * (depth - 3) + "]" * (depth - 3)
            return ('{"round_id": "r1", "occurred_at": 1, "standings": [{"player": "a", "rank": %s, "x": %s}, '
                    '{"player": "b", "rank": 2}]}' % (rank, deep))

        assert parse_round(entry(MAX_NESTING), limits=LIMITS).round_id == "r1"
        assert rejection(entry(MAX_NESTING + 1)).reason == "not_json"


_TOP_VALUES = [None, True, False, 0, 1, -1, 2.5, 0.0, -0.0, 1e308, 10**400, float("nan"), float("inf"), "", "r1",
               "blitz", "bad ladder", "a\n", "2024-05-01T12:00:00Z", "yesterday", [], {}, [1], {"a": 1}]


def _top_level_cases() -> list[dict[str, object]]:
    """Round dicts varying each top-level field (absent, or each value of _TOP_VALUES)."""
    cases = [round_dict()]
    for name in ("round_id", "ladder", "occurred_at", "standings", "weight", "perf_ceiling", "extra"):
        without = round_dict()
        without.pop(name, None)
        cases.append(without)
        cases += [round_dict(**{name: value}) for value in _TOP_VALUES]
    return cases


@pytest.mark.parametrize("data", _top_level_cases())
@pytest.mark.parametrize("strict", [False, True])
def test_top_level_rules_are_the_schemas(data: dict[str, object], strict: bool) -> None:
    """``parse_round`` refuses a round by the schema's rules exactly when ``schemas/round-result.v2.json``
    refuses it, whatever each top-level field holds."""
    refuses, reader_refuses = schema_and_reader(json.dumps(data, allow_nan=True), Limits(strict=strict))
    assert refuses == reader_refuses


@pytest.mark.parametrize("round_", [
    RoundResult(round_id="r1", ladder="blitz", occurred_at=1.7e9, standings=[Standing("ann", 1), Standing("bob", 2)]),
    RoundResult(round_id='q"\\\u00e9\u2028\n', ladder="x", occurred_at=-0.0, weight=0.5, perf_ceiling=3000.25,
                standings=[Standing("\u00fcml\u00e4ut", 2), Standing("\x00\x1f", 1), Standing("\U0001F600", 2)]),
    RoundResult(round_id="r", occurred_at=1e-7, weight=1e300, perf_ceiling=-1e-300, standings=[]),
    RoundResult(round_id="r", occurred_at=1600000000, standings=[Standing("a", 1), Standing("b", 2)]),  # int time
    RoundResult(round_id="r", occurred_at=1.0, weight=1, standings=[Standing("a", 1)]),  # int weight
    RoundResult(round_id="r", occurred_at=1.0, standings=[Standing("a", True), Standing("b", 2)]),  # bool rank
    RoundResult(round_id="r", occurred_at=1.0, standings=[Standing("a", 1, "t"), Standing("b", 2, None, 0.5)]),
])
def test_content_hash_is_the_sha256_of_the_canonical_json(round_: RoundResult) -> None:
    """content_hash hashes the JSON of [ladder, round_id, time, standings ([player, rank], or
    [player, rank, team, weight] for a team member or partial play), weight, ceiling or null]:
    a stored round's hash never changes."""

    def expected(r: RoundResult) -> str:
        rows = [[s.player, s.rank] if s.team is None and s.weight == 1.0 else [s.player, s.rank, s.team, s.weight]
                for s in r.standings]
        canonical = [r.ladder, r.round_id, r.occurred_at, rows, r.weight,
                     r.perf_ceiling if math.isfinite(r.perf_ceiling) else None]
        return hashlib.sha256(json.dumps(canonical, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()

    assert round_.content_hash() == expected(round_)
    try:
        parsed = parse_round(round_.to_json(), limits=LIMITS)
    except RoundRejected as rejected:
        parsed = rejected.round
    if parsed is not None:
        assert parsed.content_hash() == expected(parsed)
