"""``stream rejected``: the rounds the service rejected (topic ``rounds-dlq``), newest first, as a table or
JSON lines; ``--follow``: oldest first, then new ones as they arrive (as ``tail -f``).
"""

from __future__ import annotations

import json
import time

import typer

from stream.cli.output import table, when
from stream.cli.store_command import EXIT_UNREACHABLE, fail
from stream.pipeline.deadletters import Rejection, follow, recent
from stream.pipeline.topics import ROUNDS_DLQ
from stream.settings import Settings

DEFAULT_LIMIT = 20
#: Longest message shown in a table cell.
MESSAGE_WIDTH = 70


HEADER = ["when (UTC)", "ladder", "round", "reason", "field", "message"]


def row(x: Rejection) -> list[str]:
    """A rejection as table cells (ids and message shown as printable text)."""
    message = x.message + (" (original cut)" if x.truncated else "")
    return [when(x.rejected_at, seconds=True), ascii(x.ladder)[1:-1] if x.ladder else "-",
            ascii(x.round_id)[1:-1] if x.round_id is not None else "-", x.reason, x.field or "-",
            message if len(message) <= MESSAGE_WIDTH else message[:MESSAGE_WIDTH - 1] + "…"]


def rejected(
    ladder: str | None = typer.Option(None, "--ladder", help="only this ladder's rejections"),
    limit: int = typer.Option(DEFAULT_LIMIT, "--limit", min=0, max=10_000, help="most recent rejections shown first"),
    follow_: bool = typer.Option(False, "--follow", help="then keep printing new rejections as they arrive"),
    json_output: bool = typer.Option(False, "--json", help="one JSON object per line"),
    timeout: float = typer.Option(0.0, "--timeout", help="--follow: stop after this many seconds (0: never)"),
) -> None:
    """The rounds the service rejected (the dead-letter topic), newest first."""
    settings = Settings.from_env()
    from kafka.errors import KafkaError

    from stream.cli.reach import require

    require(settings, kafka=True)

    def show(items: list[Rejection], header: bool) -> None:
        if json_output:
            for x in items:
                typer.echo(json.dumps(x.to_dict(), ensure_ascii=False))
        elif items:
            lines = table(HEADER, [row(x) for x in items]).splitlines()
            typer.echo("\n".join(lines if header else lines[1:]))

    try:
        if follow_:
            deadline = time.monotonic() + timeout if timeout > 0 else None
            header = True
            for x in follow(settings, ladder=ladder, deadline=deadline, last=limit):
                show([x], header=header)
                header = False
            return
        found = recent(settings, limit=limit, ladder=ladder) if limit else []
        show(found, header=True)
        if not found and not json_output:
            typer.echo("no rejected rounds" + (f" in ladder {ladder!r}" if ladder else ""))
    except (KafkaError, TimeoutError) as exc:
        fail(f"cannot read {settings.topic(ROUNDS_DLQ)} from Kafka at {settings.kafka_bootstrap}: {exc}",
             EXIT_UNREACHABLE)


def register(app: typer.Typer) -> None:
    """Add ``stream rejected`` to the CLI."""
    app.command("rejected")(rejected)
