"""``stream tail``'s table line: a change of a round with teams or partial play (RatingChange v4)
shows the player's team and share played; a plain round's change shows neither."""

from __future__ import annotations

import json

from stream.cli.tail import format_change
from stream.contracts import RatingChange
from tests.contracts.wire_oracle import to_dict


def _change(team: str | None, weight: float | None) -> RatingChange:
    return RatingChange(ladder="blitz", round_id="r1", player="ann", rank=1, field_size=4, performance=1600.0,
                        mu_before=1500.0, sigma_before=350.0, mu_after=1520.0, sigma_after=300.0,
                        display_rating=900.0, tier="bronze", rounds_played=1, occurred_at=1_700_000_000.0,
                        team=team, weight=weight)


def test_team_and_weight_shown_for_v4_changes() -> None:
    plain = format_change(to_dict(_change(None, None)))
    assert "team" not in plain and "weight" not in plain
    teamed = format_change(to_dict(_change("red", 0.5)))
    assert teamed == f"{plain}  team red  weight 0.5"
    individual = format_change(to_dict(_change(None, 1.0)))  # an individual entry of a team round
    assert individual == f"{plain}  team -  weight 1"
    # as read from the topic (JSON): the same line
    assert format_change(json.loads(_change("red", 0.5).to_json())) == teamed


def test_a_provisional_rating_is_marked() -> None:
    """RatingChange v5: a provisional rating shows as ``900.0?``; a settled one (or an event from
    before v5, without the field) as before."""
    plain = format_change(to_dict(_change(None, None)))
    settled = _change(None, None)
    settled.provisional = False
    assert format_change(json.loads(settled.to_json())) == plain
    marked = _change(None, None)
    marked.provisional = True
    line = format_change(json.loads(marked.to_json()))
    assert "rating    900.0?  bronze" in line and line.replace("900.0?", "900.0") == plain
