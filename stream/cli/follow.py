"""Follow topics from the CLI (``stream tail``, ``stream queue watch``): a group-less consumer assigned
every partition (starts at once, leaves nothing behind), from the beginning or the end, and the print
loop with ``--max-events`` / ``--timeout``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import typer

from stream.cli.store_command import EXIT_UNREACHABLE, fail
from stream.connections import kafka_python_config
from stream.settings import Settings

#: Milliseconds one poll waits for records.
POLL_MS = 500
#: Seconds between two looks for the topics while none exists yet.
TOPIC_WAIT_S = 0.5


def follow_records(settings: Settings, topics: Sequence[str], *, from_beginning: bool,
                   deadline: float | None) -> Iterator[tuple[str, bytes | None, Any]]:
    """(topic name before the prefix, record key, decoded JSON value) of every record of ``topics``
    until ``deadline`` (monotonic) if given; a value that is not JSON is skipped."""
    from kafka import KafkaConsumer, TopicPartition

    names = {settings.topic(topic): topic for topic in topics}
    consumer = KafkaConsumer(group_id=None, enable_auto_commit=False, allow_auto_create_topics=False,
                             **kafka_python_config(settings))
    try:
        parts: list[Any] = []
        while True:
            consumer.topics()  # refresh metadata
            parts = [TopicPartition(t, p) for t in names for p in sorted(consumer.partitions_for_topic(t) or ())]
            if parts:
                break
            if deadline is not None and time.monotonic() > deadline:
                return  # the worker has not created them yet
            time.sleep(TOPIC_WAIT_S)
        consumer.assign(parts)
        if from_beginning:
            consumer.seek_to_beginning(*parts)
        else:
            consumer.seek_to_end(*parts)
        while deadline is None or time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=POLL_MS).items():
                for record in records:
                    try:
                        value = json.loads(record.value)
                    except (ValueError, TypeError):
                        continue  # not an event: nothing to show
                    yield names[tp.topic], record.key, value
    finally:
        consumer.close()


def print_lines(settings: Settings, lines: Iterable[str], *, max_events: int, timeout_exit: int) -> None:
    """Echo ``lines`` (drawn from a :func:`follow_records` iterator); return after ``max_events``
    (0: never); exit ``timeout_exit`` if the lines end first, EXIT_UNREACHABLE when Kafka fails."""
    from kafka.errors import KafkaError

    shown = 0
    try:
        for line in lines:
            typer.echo(line)
            shown += 1
            if max_events and shown >= max_events:
                return
    except KafkaError as exc:
        fail(f"cannot reach Kafka at {settings.kafka_bootstrap}: {exc}", EXIT_UNREACHABLE)
    if max_events:
        typer.echo(f"timeout: {shown} of {max_events} events", err=True)
        raise typer.Exit(timeout_exit)
