"""``parse_round``'s orjson reading of a message's bytes (``_accept_fast``) gives the verdict of
the ``json`` reading on any input: the same round, or the same rejection (reason, field, message)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stream.contracts.round as round_module
from stream.contracts import Limits, RoundRejected, parse_round
from stream.contracts.round import STORED

LIMITS = Limits()
STRICT = Limits(strict=True, max_round_size=8, max_id_length=12, max_weight=5.0)


def verdict(raw: bytes, limits: Limits) -> str:
    """The round as a dict with its field types, or the rejection (repr: NaN compares equal)."""
    try:
        round_ = parse_round(raw, limits=limits)
        return repr((round_.to_dict(), type(round_.occurred_at), type(round_.weight), round_.content_hash(),
                     [(type(s.player), type(s.rank), s.team, s.weight) for s in round_.standings]))
    except RoundRejected as rejected:
        return repr((rejected.reason, rejected.field, rejected.message,
                     None if rejected.round is None else rejected.round.to_dict()))


def fast_and_slow(raw: bytes, limits: Limits) -> tuple[str, str]:
    """The verdicts with the orjson reading, and with it turned off (every message through ``json``)."""
    fast = verdict(raw, limits)
    original = round_module._accept_fast
    round_module._accept_fast = lambda *args: None  # type: ignore[assignment]
    try:
        slow = verdict(raw, limits)
    finally:
        round_module._accept_fast = original
    return fast, slow


def test_the_fast_reading_is_taken_for_a_plain_round() -> None:
    """The property below compares something: a valid duel goes through orjson."""
    raw = b'{"round_id":"r","ladder":"L","occurred_at":1.5,"standings":[{"player":"a","rank":1},{"player":"b","rank":2}]}'
    assert round_module._accept_fast(raw, LIMITS) == parse_round(raw.decode(), limits=LIMITS)


NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, 2, 2**53, 2**53 + 1, 2**63 - 1, 2**63, 2**64, 2**64 + 1, -(2**63) - 1, 10**30, 1.0, 0.5,
                     -0.0, 1e-320, 1.7e9, 1e308, 253_402_300_799, 253_402_300_800]),
)
TEXTS = st.one_of(st.sampled_from(["a", "b", "ann", "blue", "L", "r-1", "", "é", "\u2028", "x" * 13, "L\n"]),
                  st.text(max_size=6))
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, TEXTS)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(TEXTS, inner, max_size=3)), max_leaves=8)
RANKS = st.one_of(st.integers(min_value=1, max_value=4), NUMBERS, VALUES)


def mostly(valid: st.SearchStrategy[Any], other: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``valid`` four times in five, else ``other``: most drawn rounds are accepted."""
    return st.sampled_from([True, True, True, True, False]).flatmap(lambda ok: valid if ok else other)


PLAYERS = st.lists(st.sampled_from(["a", "b", "c", "d", "é", "\u2028", "x" * 13]), unique=True, min_size=2, max_size=5)


@st.composite
def standings(draw: st.DrawFn) -> list[Any]:
    """Standings in any of the accepted forms, mostly valid."""
    players = draw(mostly(PLAYERS, st.lists(st.sampled_from(["a", "b", "", "x" * 13]), max_size=5)))
    rank = mostly(st.integers(min_value=1, max_value=4), RANKS)
    share = mostly(st.sampled_from([1, 1.0, 0.5, 0.25]), NUMBERS)
    form = draw(st.sampled_from(["explicit", "order", "teams", "weights", "any"]))
    if form == "explicit":
        return [{"player": p, "rank": draw(rank)} for p in players]
    if form == "order":
        return [p if draw(st.booleans()) else [p] for p in players]
    if form == "teams":
        return [{"team": f"t{i}", "players": [p, {"player": p + "2", "weight": draw(share)}], "rank": draw(rank)}
                for i, p in enumerate(players)]
    if form == "weights":
        return [{"player": p, "rank": draw(rank), "weight": draw(share)} for p in players]
    return draw(st.lists(VALUES, max_size=4))


@st.composite
def rounds(draw: st.DrawFn) -> dict[str, Any]:
    """Round-like objects: the fields of a round, mostly valid, some missing, some of any value, some extra."""
    out: dict[str, Any] = {
        "round_id": draw(mostly(st.sampled_from(["r1", "r-2", "é"]), st.one_of(st.just("r" * 13), VALUES))),
        "ladder": draw(mostly(st.sampled_from(["L", "bench-0"]), st.one_of(st.just("bad ladder"), VALUES))),
        "occurred_at": draw(mostly(st.one_of(st.floats(0, 2e9), st.integers(0, 2 * 10**9),
                                             st.just("2024-05-01T12:00:00Z")), NUMBERS)),
        "standings": draw(standings()),
        "weight": draw(mostly(st.one_of(st.floats(0.1, 4.0), st.integers(1, 4)), NUMBERS)),
        "perf_ceiling": draw(mostly(st.one_of(st.none(), st.floats(-1e4, 1e4)), NUMBERS)),
        "extra": draw(VALUES),
    }
    for name in draw(mostly(st.just(set()), st.sets(st.sampled_from(sorted(out)), max_size=2))):
        del out[name]
    if draw(mostly(st.just(True), st.just(False))):
        out.pop("extra", None)
    return out


def encode(value: Any, ascii_only: bool) -> bytes:
    """JSON text as a producer may write it (NaN and infinities as Python writes them)."""
    return json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


@settings(max_examples=1000, deadline=None)
@given(rounds(), st.booleans(), st.sampled_from([LIMITS, STRICT, STORED]))
def test_fast_reading_equals_json_reading(value: dict[str, Any], ascii_only: bool, limits: Limits) -> None:
    fast, slow = fast_and_slow(encode(value, ascii_only), limits)
    assert fast == slow


EDITS = st.sampled_from([
    (b'"rank": 2', b'"rank": 123456789012345678901234567890'), (b'"weight": 1.0', b'"weight": 1e400'),
    (b'"weight": 1.0', b'"weight": 123456789012345678901234567890'), (b'"weight": 1.0', b'"weight": NaN'),
    (b'"perf_ceiling": 3000.0', b'"perf_ceiling": -9223372036854775809'), (b'"a"', b'"\\ud800"'),
    (b'"a"', b'"\\u00e9\\ud83d\\ude00"'), (b'"a"', b'"\xed\xa0\x80"'), (b'"a"', b'"\xff"'), (b'{', b'\xef\xbb\xbf{'),
    (b'"ladder": "L"', b'"ladder": "L", "ladder": "M"'), (b'"round_id": "r1"', b'"round_id": "r1", "round_id": 7'),
    (b'1700000000.0', b'1.7E9'), (b'1700000000.0', b'17e8'), (b'"rank": 1', b'"rank": 1.0'), (b'"rank": 1', b'"rank": -0'),
    (b'}', b'}}'), (b'}', b'} '), (b'[', b'[ \t\n'), (b'"a"', b'"a\x00"'), (b': ', b':'), (b'"extra": 0', b'"extra": ' + b'[' * 300 + b']' * 300),
])
BASE = (b'{"round_id": "r1", "ladder": "L", "occurred_at": 1700000000.0, "standings": [{"player": "a", "rank": 1}, '
        b'{"player": "b", "rank": 2}], "weight": 1.0, "perf_ceiling": 3000.0, "extra": 0}')


@settings(max_examples=300, deadline=None)
@given(st.lists(EDITS, max_size=3), st.lists(st.tuples(st.integers(0, len(BASE)), st.binary(max_size=2)), max_size=2),
       st.sampled_from([LIMITS, STRICT, STORED]))
def test_fast_reading_equals_json_reading_on_edited_bytes(edits: list[tuple[bytes, bytes]],
                                                          noise: list[tuple[int, bytes]], limits: Limits) -> None:
    """Literals json and orjson read differently (big integers, NaN, infinities, lone surrogates,
    a BOM, duplicate keys, deep nesting) and random bytes, edited into a valid round."""
    raw = BASE
    for old, new in edits:
        raw = raw.replace(old, new, 1)
    for at, inserted in noise:
        raw = raw[:at] + inserted + raw[at:]
    fast, slow = fast_and_slow(raw, limits)
    assert fast == slow


@pytest.mark.parametrize("raw", [
    BASE.replace(b'"weight": 1.0', b'"weight": 123456789012345678901234567890'),
    BASE.replace(b'"perf_ceiling": 3000.0', b'"perf_ceiling": 123456789012345678901234567890'),
    BASE.replace(b'"extra": 0', b'"extra": ' + b'[' * 300 + b']' * 300),
])
def test_what_orjson_reads_differently_goes_the_slow_way(raw: bytes) -> None:
    """A weight or ceiling orjson may have read from a big integer, and a message that may nest
    deeper than ``json.loads`` can, are not taken by the fast reading."""
    assert round_module._accept_fast(raw, STORED) is None
    fast, slow = fast_and_slow(raw, STORED)
    assert fast == slow
