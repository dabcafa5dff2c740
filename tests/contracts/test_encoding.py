"""``RatingChange.to_json()`` and ``PlayerUpdate.to_json()`` (the bulk encoders of
stream/contracts/encoding.py with one row) write what ``json.dumps`` of ``to_dict()`` writes, for
every shape of either message: a round's or a correction's change, with or without rank,
performance, tier, league and division, team and weight; an update with or without previous
seqs, ratings, teams and weights. Phase two accepts a fan-out section only if it equals the
stored one byte for byte, so the encoders must never drift from the reference."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.contracts import PlayerUpdate, RatingChange
from stream.contracts.schemas import validate
from tests.contracts.wire_oracle import reference_json, to_dict

TEXT = st.text(max_size=6)
FLOAT = st.floats(allow_nan=False, allow_infinity=False) | st.integers(-10**6, 10**6).map(float)
NUMBER = FLOAT | st.integers(-10**6, 10**6)


@st.composite
def changes(draw: st.DrawFn) -> RatingChange:
    correction = draw(st.none() | TEXT)
    weight = draw(st.none() | st.floats(0.0, 1.0))
    return RatingChange(
        ladder=draw(TEXT), round_id=draw(TEXT), player=draw(TEXT), rank=draw(st.none() | st.integers(1, 10**6)),
        field_size=draw(st.none() | st.integers(2, 10**6)), performance=draw(st.none() | FLOAT),
        mu_before=draw(NUMBER), sigma_before=draw(NUMBER), mu_after=draw(NUMBER), sigma_after=draw(NUMBER),
        display_rating=draw(NUMBER), tier=draw(st.none() | TEXT.filter(bool)), rounds_played=draw(st.integers(0, 10**9)),
        occurred_at=draw(NUMBER), kind="round" if correction is None else "correction", correction_id=correction,
        league=draw(st.none() | TEXT), division=draw(st.none() | st.integers(1, 9)),
        team=None if weight is None else draw(st.none() | TEXT), weight=weight)


@st.composite
def updates(draw: st.DrawFn) -> PlayerUpdate:
    n = draw(st.integers(1, 5))
    column = lambda values: draw(st.lists(values, min_size=n, max_size=n))  # noqa: E731
    rated = draw(st.booleans())
    weights = draw(st.none() | st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n))
    return PlayerUpdate(
        ladder=draw(TEXT), round_id=draw(TEXT), seq=draw(st.integers(1, 10**9)), occurred_at=draw(NUMBER),
        weight=draw(NUMBER), field_size=draw(st.integers(n, 10**6)), players=column(TEXT),
        ranks=column(st.integers(1, 10**6)), performances=column(NUMBER),
        previous_seqs=draw(st.none() | st.lists(st.integers(0, 10**9), min_size=n, max_size=n)),
        mu_after=column(FLOAT) if rated else None, sigma_after=column(FLOAT) if rated else None,
        teams=None if weights is None else draw(st.none() | st.lists(st.none() | TEXT, min_size=n, max_size=n)),
        weights=weights)


@settings(max_examples=400, deadline=None)
@given(changes())
def test_rating_change_json_is_the_reference(change: RatingChange) -> None:
    assert change.to_json().encode() == reference_json(change)
    assert RatingChange.from_json(change.to_json()) == change


@settings(max_examples=400, deadline=None)
@given(updates())
def test_player_update_json_is_the_reference(update: PlayerUpdate) -> None:
    assert update.to_json().encode() == reference_json(update)


def test_a_correction_change_validates_and_names_its_correction() -> None:
    change = RatingChange(ladder="L", round_id="r/1", player='p"', rank=None, field_size=None, performance=None,
                          mu_before=1500.0, sigma_before=350.0, mu_after=1490.5, sigma_after=300.25,
                          display_rating=900.0, tier=None, rounds_played=0, occurred_at=1.7e9, kind="correction",
                          correction_id="c-1")
    value = change.to_json().encode()
    assert value == reference_json(change)
    validate("rating-change", value)
    assert to_dict(change)["event_id"] == "L/r/1/p\"/c-1"
    assert to_dict(RatingChange.from_json(value))["event_id"] == to_dict(change)["event_id"]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_refused(bad: float) -> None:
    change = RatingChange(ladder="L", round_id="r", player="p", rank=1, field_size=2, performance=1.0,
                          mu_before=bad, sigma_before=1.0, mu_after=1.0, sigma_after=1.0, display_rating=1.0,
                          tier=None, rounds_played=1, occurred_at=1.0)
    with pytest.raises(ValueError):
        change.to_json()
    with pytest.raises(ValueError):
        PlayerUpdate("L", "r", 1, 1.0, 1.0, 1, ["p"], [1], [bad]).to_json()
