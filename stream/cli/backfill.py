"""``stream backfill FILE [--append]``: validate a history of rounds completely (exit 2, nothing written),
then write what the stream would have into Redis (:func:`stream.pipeline.backfill.backfill`), no Kafka.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer

from stream.batch.sources import SourceError
from stream.cli.publish import MAX_REPORTED_ERRORS, InvalidFile, read_rounds
from stream.cli.replay import progress
from stream.cli.store_command import EXIT_BAD_INPUT, fail, run_with_store
from stream.contracts import Limits
from stream.pipeline.backfill import BackfillRefused, backfill
from stream.pipeline.context import PipelineContext
from stream.settings import Settings
from stream.store.store import Store


def register(app: typer.Typer) -> None:
    """Add ``stream backfill`` to the CLI app."""
    app.command("backfill")(backfill_command)


def backfill_command(
    file: Annotated[Path, typer.Argument(help="rounds: .jsonl (.gz ok), .csv, or a directory of contest files")],
    append: Annotated[bool, typer.Option("--append", help="add to ladders that already have rounds")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the summary as JSON on stdout")] = False,
) -> None:
    """Rate a history of rounds in process and write it into Redis as the stream would (no Kafka)."""
    settings = Settings.from_env()
    started = time.perf_counter()
    try:
        rounds = read_rounds(file, Limits.from_settings(settings))
    except SourceError as exc:
        fail(f"bad input: {exc.report()}", EXIT_BAD_INPUT)
    except InvalidFile as exc:
        shown = "\n".join(f"  {e.report()}" for e in exc.errors[:MAX_REPORTED_ERRORS])
        fail(f"{len(exc.errors)} bad row(s) or round(s) in {file}; nothing written:\n{shown}", EXIT_BAD_INPUT)
    loaded = time.perf_counter()

    async def go(store: Store) -> dict[str, Any]:
        summary = await backfill(PipelineContext.from_settings(settings, store), rounds, append=append, on_round=tick)
        return asdict(summary)

    try:
        with progress(len(rounds)) as tick:
            summary = run_with_store(settings, go, write=True)
    except BackfillRefused as exc:
        fail(f"refused: {exc}", EXIT_BAD_INPUT)
    summary.update({"input": str(file), "load_s": round(loaded - started, 3),
                    "write_s": round(time.perf_counter() - loaded, 3)})
    typer.echo(json.dumps(summary) if as_json else " ".join(f"{k}={v}" for k, v in summary.items()))
