"""Follow topics from the CLI (``stream tail``, ``stream queue watch``) with a
:class:`~stream.pipeline.deadletters.TopicReader`, and the print loop with ``--max-events`` / ``--timeout``."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import typer

from stream.cli.store_command import EXIT_UNREACHABLE, fail
from stream.pipeline.deadletters import TopicReader
from stream.settings import Settings


def follow_records(settings: Settings, topics: Sequence[str], *, from_beginning: bool,
                   deadline: float | None) -> Iterator[tuple[str, bytes | None, Any]]:
    """(topic name before the prefix, record key, decoded JSON value) of every record of ``topics``
    until ``deadline`` (monotonic) if given; a value that is not JSON is skipped."""
    with TopicReader(settings, topics) as reader:
        if not reader.wait(deadline):
            return  # the worker has not created them yet
        reader.seek({} if from_beginning else None)
        while deadline is None or time.monotonic() < deadline:
            for record in reader.records():
                try:
                    value = json.loads(record.value)
                except (ValueError, TypeError):
                    continue  # not an event: nothing to show
                yield reader.names[record.topic], record.key, value


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
