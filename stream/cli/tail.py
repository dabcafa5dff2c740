"""``stream tail``: follow the ``rating-changes`` topic, optionally filtered, as table lines or JSON.

The consumer has no group: it assigns itself every partition of the topic (no group join, so it
starts at once and leaves nothing behind), from the beginning with ``--from-beginning``, else
from the end. ``--max-events`` and ``--timeout`` make it usable in scripts and tests: it exits 0
once ``--max-events`` events were printed, and 1 if the timeout ends the wait first.

Against the embedded Tansu broker "the end" is the start of the last stored batch (its
ListOffsets(LATEST) quirk, stream/stack/README.md), so a few already-published events may show.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import typer

from stream.cli.publish import EXIT_UNREACHABLE, kafka_client_config
from stream.settings import Settings

#: Topic name (before the prefix).
RATING_CHANGES_TOPIC = "rating-changes"
#: Milliseconds one poll waits for records.
POLL_MS = 500
#: Seconds between two looks for the topic while it does not exist yet.
TOPIC_WAIT_S = 0.5
#: Exit code when --timeout ends the wait before --max-events events arrived.
EXIT_TIMEOUT = 1


def format_change(change: dict[str, Any]) -> str:
    """One human-readable line: ladder, round, player, rank/field, mu and sigma moves, display rating, tier;
    for a change of a round with teams or partial play (RatingChange v4: it carries ``weight``) also
    the player's team ("-": an individual entry) and the share of the match played."""
    delta = change["mu_after"] - change["mu_before"]
    tier = change.get("tier") or "-"
    line = (f"{change['ladder']:<12} {change['round_id']:<16} {change['player']:<20} "
            f"#{change['rank']}/{change['field_size']:<5} mu {change['mu_before']:8.1f} -> {change['mu_after']:8.1f} "
            f"({delta:+7.1f})  sigma {change['sigma_after']:6.1f}  rating {change['display_rating']:8.1f}  {tier}")
    if change.get("weight") is None:  # a plain round's change (v1-v3 fields only)
        return line
    return f"{line}  team {change.get('team') or '-'}  weight {change['weight']:g}"


def matches(change: dict[str, Any], ladders: list[str], players: list[str]) -> bool:
    """Whether a change passes the --ladder / --player filters (empty filter: everything)."""
    return (not ladders or change.get("ladder") in ladders) and (not players or change.get("player") in players)


def follow(settings: Settings, *, from_beginning: bool, deadline: float | None) -> Iterator[dict[str, Any]]:
    """Every RatingChange on ``rating-changes`` (decoded JSON), until ``deadline`` (monotonic) if given."""
    from kafka import KafkaConsumer, TopicPartition

    topic = settings.topic(RATING_CHANGES_TOPIC)
    consumer = KafkaConsumer(group_id=None, enable_auto_commit=False, allow_auto_create_topics=False,
                             **kafka_client_config(settings))
    try:
        partitions = consumer.partitions_for_topic(topic)
        while not partitions:  # the worker has not created it yet
            if deadline is not None and time.monotonic() > deadline:
                return
            time.sleep(TOPIC_WAIT_S)
            consumer.topics()  # refresh metadata
            partitions = consumer.partitions_for_topic(topic)
        assigned = [TopicPartition(topic, p) for p in sorted(partitions)]
        consumer.assign(assigned)
        if from_beginning:
            consumer.seek_to_beginning(*assigned)
        else:
            consumer.seek_to_end(*assigned)
        while deadline is None or time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=POLL_MS).values():
                for record in records:
                    try:
                        yield json.loads(record.value)
                    except (ValueError, TypeError):
                        continue  # not a RatingChange: nothing to show
    finally:
        consumer.close()


def tail(
    ladder: list[str] = typer.Option([], "--ladder", help="only these ladders (repeatable)"),
    player: list[str] = typer.Option([], "--player", help="only these players (repeatable)"),
    from_beginning: bool = typer.Option(False, "--from-beginning", help="start at the oldest stored change"),
    json_output: bool = typer.Option(False, "--json", help="one RatingChange JSON object per line"),
    max_events: int = typer.Option(0, "--max-events", help="exit after this many events (0: never)"),
    timeout: float = typer.Option(0.0, "--timeout", help="exit after this many seconds (0: never)"),
) -> None:
    """Follow rating changes as they are published."""
    settings = Settings.from_env()
    from stream.cli.reach import require

    require(settings, kafka=True)
    deadline = time.monotonic() + timeout if timeout > 0 else None
    from kafka.errors import KafkaError

    shown = 0
    try:
        for change in follow(settings, from_beginning=from_beginning, deadline=deadline):
            if not matches(change, ladder, player):
                continue
            typer.echo(json.dumps(change, separators=(",", ":")) if json_output else format_change(change))
            shown += 1
            if max_events and shown >= max_events:
                return
    except KafkaError as exc:
        typer.echo(f"error: cannot reach Kafka at {settings.kafka_bootstrap}: {exc}", err=True)
        raise typer.Exit(EXIT_UNREACHABLE) from None
    if max_events:
        typer.echo(f"timeout: {shown} of {max_events} events", err=True)
        raise typer.Exit(EXIT_TIMEOUT)


def register(app: typer.Typer) -> None:
    """Add ``stream tail`` to the CLI."""
    app.command("tail")(tail)
