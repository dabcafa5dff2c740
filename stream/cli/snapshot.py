"""``stream export LADDER --output FILE`` and ``stream import FILE``: a ladder's state as a file, the
records of :mod:`stream.store.snapshot` as JSON lines or ``kind,id,field,value`` CSV rows. ``import``
checks the whole file before writing, and only into a ladder that has no state.
"""

from __future__ import annotations

import csv
import gzip
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Annotated, Any, cast

import typer

from stream.cli.replay import replaced
from stream.cli.store_command import EXIT_BAD_INPUT, EXIT_NOT_FOUND, fail, run_with_store
from stream.settings import Settings
from stream.store.snapshot import Record, SnapshotError, export_ladder, import_ladder
from stream.store.store import Store

CSV_HEADER = ("kind", "id", "field", "value")


def register(app: typer.Typer) -> None:
    """Add ``stream export`` and ``stream import`` to the CLI app."""
    app.command("export")(export_command)
    app.command("import")(import_command)


def _is_csv(path: Path) -> bool:
    return path.name.lower().removesuffix(".gz").endswith(".csv")


def _open(path: Path, mode: str) -> IO[Any]:
    if path.suffix.lower() == ".gz":
        return cast(IO[Any], gzip.open(path, mode + "t", encoding="utf-8", newline=""))
    return open(path, mode, encoding="utf-8", newline="")


def read_records(path: Path) -> Iterator[Record]:
    """The records of a snapshot file; :class:`SnapshotError` naming the line of a malformed one."""
    with _open(path, "r") as handle:
        if _is_csv(path):
            reader = csv.reader(handle)
            if next(reader, None) != list(CSV_HEADER):
                raise SnapshotError(f"{path}:1: the header must be {','.join(CSV_HEADER)}")
            current: Record | None = None
            for row in reader:
                if len(row) != 4:
                    raise SnapshotError(f"{path}:{reader.line_num}: expected 4 columns, got {len(row)}")
                kind, id_, name, value = row
                if current is None or (current.kind, current.id) != (kind, id_):
                    if current is not None:
                        yield current
                    current = Record(kind, id_, {})
                current.fields[name] = value
            if current is not None:
                yield current
            return
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                fields = data["fields"]
                ok = (isinstance(data["kind"], str) and isinstance(data["id"], str) and isinstance(fields, dict)
                      and all(isinstance(v, str) for v in fields.values()))
            except (ValueError, KeyError, TypeError) as exc:
                raise SnapshotError(f"{path}:{number}: not a snapshot record: {exc}") from None
            if not ok:
                raise SnapshotError(f"{path}:{number}: a record is {{\"kind\": str, \"id\": str, \"fields\": {{str: str}}}}")
            yield Record(data["kind"], data["id"], fields)


def export_command(
    ladder: Annotated[str, typer.Argument(help="ladder to export")],
    output: Annotated[Path, typer.Option("--output", "-o", help="file to write: .jsonl or .csv (.gz to compress)")],
) -> None:
    """Write a ladder's whole stored state to a file (restore it with `stream import`)."""
    settings = Settings.from_env()
    if not output.parent.is_dir() or output.is_dir():
        fail(f"cannot write {output}: parent directory missing or output is a directory", EXIT_BAD_INPUT)

    async def go(store: Store) -> list[Record]:
        return [record async for record in export_ladder(store, ladder, now=time.time())]

    try:
        records = run_with_store(settings, go)
    except SnapshotError as exc:
        fail(str(exc), EXIT_NOT_FOUND)
    with replaced(output) as tmp, _open(tmp, "w") as handle:
        if _is_csv(output):
            writer = csv.writer(handle)
            writer.writerow(CSV_HEADER)
            for record in records:
                writer.writerows((record.kind, record.id, name, value) for name, value in record.fields.items())
        else:
            for record in records:
                handle.write(json.dumps({"kind": record.kind, "id": record.id, "fields": record.fields},
                                        ensure_ascii=False) + "\n")
    counts = {kind: sum(r.kind == kind for r in records) for kind in ("player", "round")}
    typer.echo(f"exported ladder {ladder!r}: {counts['player']} players, {counts['round']} rounds to {output}")


def import_command(
    file: Annotated[Path, typer.Argument(help="a snapshot written by `stream export` (.jsonl or .csv, .gz ok)")],
) -> None:
    """Restore a ladder from a snapshot into a Redis that has no state for that ladder."""
    settings = Settings.from_env()
    if not file.is_file():
        fail(f"no such file: {file}", EXIT_BAD_INPUT)
    try:
        records = list(read_records(file))
        ladder, players, rounds = run_with_store(settings, lambda store: import_ladder(store, records), write=True)
    except (SnapshotError, UnicodeDecodeError, csv.Error, EOFError, OSError) as exc:
        fail(f"cannot import {file}: {exc}", EXIT_BAD_INPUT)
    typer.echo(f"imported ladder {ladder!r}: {players} players, {rounds} rounds")
