"""``stream tail`` against the real local broker: filters, JSON and table output, --max-events/--timeout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stream.cli.main import app
from stream.cli.tail import EXIT_TIMEOUT, format_change
from stream.contracts import RatingChange
from tests.contracts.wire_oracle import to_dict
from stream.pipeline.topics import ensure_topics
from tests.cli.kafka_helpers import produce, topic_exists

pytestmark = pytest.mark.integration

PARTITIONS = 4
#: Seconds a tail run may wait in these tests (it returns as soon as --max-events arrived).
TAIL_TIMEOUT_S = 30


def _change(ladder: str, round_id: str, player: str, rank: int, mu_before: float, mu_after: float) -> RatingChange:
    return RatingChange(ladder=ladder, round_id=round_id, player=player, rank=rank, field_size=3, performance=1600.0,
                        mu_before=mu_before, sigma_before=350.0, mu_after=mu_after, sigma_after=300.0,
                        display_rating=mu_after - 600.0, tier="bronze", rounds_played=1, occurred_at=1_700_000_000.0)


CHANGES = [
    _change("blitz", "r1", "ann", 1, 1500.0, 1620.5),
    _change("blitz", "r1", "bob", 2, 1500.0, 1490.0),
    _change("classic", "c1", "ann", 2, 1500.0, 1450.0),
    _change("blitz", "r2", "ann", 1, 1620.5, 1700.0),
]


@pytest.fixture()
def published(local_stack, fresh_prefix: str, tmp_path: Path) -> dict[str, str]:
    """CHANGES on this test's rating-changes topic (key = player); returns the env for `stream tail`."""
    topic = f"{fresh_prefix}rating-changes"
    ensure_topics(local_stack.bootstrap, {topic: PARTITIONS})
    produce(local_stack.bootstrap, topic, [(c.player.encode(), c.to_json().encode()) for c in CHANGES])
    return {"KAFKA_BOOTSTRAP": local_stack.bootstrap, "TOPIC_PREFIX": fresh_prefix,
            "STACK_STATE_FILE": str(tmp_path / "no-stack.json")}


def _tail(env: dict[str, str], *args: str):
    return CliRunner().invoke(app, ["tail", "--from-beginning", "--timeout", str(TAIL_TIMEOUT_S), *args], env=env)


def test_json_output_with_player_filter(published) -> None:
    result = _tail(published, "--json", "--player", "ann", "--max-events", "3")
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.strip().splitlines()]
    # ann's key keeps her changes on one partition, in publish order.
    assert [(e["ladder"], e["round_id"]) for e in events] == [("blitz", "r1"), ("classic", "c1"), ("blitz", "r2")]
    assert all(e["player"] == "ann" for e in events)
    assert events[0]["event_id"] == "blitz/r1/ann"


def test_ladder_filter_and_table_lines(published) -> None:
    result = _tail(published, "--ladder", "classic", "--max-events", "1")
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert lines == [format_change(to_dict(CHANGES[2]))]
    assert "classic" in lines[0] and "ann" in lines[0] and "-50.0" in lines[0]


def test_timeout_before_max_events_exits_nonzero(published) -> None:
    result = CliRunner().invoke(app, ["tail", "--from-beginning", "--json", "--player", "bob", "--max-events", "2",
                                      "--timeout", "3"], env=published)
    assert result.exit_code == EXIT_TIMEOUT
    assert [json.loads(line)["player"] for line in result.stdout.strip().splitlines()] == ["bob"]


def test_missing_topic_waits_until_timeout(local_stack, fresh_prefix: str, tmp_path: Path) -> None:
    env = {"KAFKA_BOOTSTRAP": local_stack.bootstrap, "TOPIC_PREFIX": fresh_prefix,
           "STACK_STATE_FILE": str(tmp_path / "no-stack.json")}
    result = CliRunner().invoke(app, ["tail", "--timeout", "2", "--max-events", "1"], env=env)
    assert result.exit_code == EXIT_TIMEOUT
    assert result.stdout.strip() == ""
    assert not topic_exists(local_stack.bootstrap, f"{fresh_prefix}rating-changes")  # tail never creates it
