"""Input files of a batch replay, validated completely before anything is rated or written.

* JSONL (``.jsonl`` / ``.json`` lines, ``.gz`` accepted): one RoundResult per line
  (schema ``schemas/round-result.v1.json``); blank lines are ignored.
* A directory of the authors' contest files (EbTech/Elo-MMR ``cache/<dataset>/0.json, 1.json``,
  in numeric order): ``{"name", "time_seconds", "standings": [[player, lo, hi], ...],
  "weight"?, "perf_ceiling"?}`` with 0-based inclusive tie ranges; ladder ``default``,
  ``round_id`` = file stem, rank = lo + 1.

Outcome-free rounds are valid input (returned; replay records and skips them).  Anything else
raises :class:`SourceError` naming the file, line or round, and field.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

from stream.contracts import DEFAULT_LADDER, Limits, RoundRejected, RoundResult, parse_round
from stream.contracts.round import NO_OUTCOME


class SourceError(ValueError):
    """Bad input: ``where`` (file:line or file), ``field`` and ``reason`` of the first problem."""

    def __init__(self, where: str, message: str, field: str | None = None, reason: str = "schema") -> None:
        super().__init__(f"{where}: {message}" + (f" (field {field})" if field else ""))
        self.message = message
        self.where = where
        self.field = field
        self.reason = reason


def read_rounds(path: Path, *, limits: Limits | None = None, errors: list[SourceError] | None = None) -> list[RoundResult]:
    """All rounds of ``path`` (a JSONL file or a directory of contest files), in order.

    ``errors``: collect the bad lines / files there and go on (``stream publish`` lists them all)
    instead of raising at the first; a file that cannot be read at all still raises."""
    limits = limits or Limits()
    if path.is_dir():
        return read_contest_dir(path, limits=limits, errors=errors)
    if not path.exists():
        raise SourceError(str(path), "no such file or directory")
    return read_jsonl(path, limits=limits, errors=errors)


def _collect(errors: list[SourceError] | None, exc: SourceError) -> None:
    """Keep a bad item's error (``errors`` given) or raise it."""
    if errors is None:
        raise exc
    errors.append(exc)


def _accept(raw: Any, limits: Limits, where: str) -> RoundResult:
    try:
        return parse_round(raw, limits=limits)
    except RoundRejected as exc:
        if exc.reason == NO_OUTCOME and exc.round is not None:
            return exc.round
        round_id = raw.get("round_id") if isinstance(raw, dict) else None
        label = f"{where} (round {round_id})" if isinstance(round_id, str) else where
        raise SourceError(label, f"{exc.reason}: {exc.message}", exc.field, exc.reason) from None


def read_jsonl(path: Path, *, limits: Limits, errors: list[SourceError] | None = None) -> list[RoundResult]:
    """Rounds of a JSONL file, one per non-blank line."""
    opener = gzip.open if path.suffix == ".gz" else open
    rounds = []
    try:
        with opener(path, "rb") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                where = f"{path}:{lineno}"
                data: Any = line
                try:
                    data = json.loads(line.decode("utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError):
                    pass  # parse_round reports it with the right reason
                try:
                    rounds.append(_accept(data, limits, where))
                except SourceError as exc:
                    _collect(errors, exc)
    except (OSError, EOFError) as exc:  # unreadable file, truncated or corrupt gzip
        raise SourceError(str(path), f"cannot read: {exc}") from None
    return rounds


def read_contest_dir(path: Path, *, limits: Limits, errors: list[SourceError] | None = None) -> list[RoundResult]:
    """Rounds of a directory of the authors' ``<n>.json`` contest files, in numeric order."""
    files = sorted((f for f in path.iterdir() if f.suffix == ".json" and f.stem.isdigit()), key=lambda f: int(f.stem))
    if not files:
        raise SourceError(str(path), "no contest files (0.json, 1.json, ...) in this directory")
    rounds = []
    for f in files:
        try:
            rounds.append(_contest(f, limits))
        except SourceError as exc:
            _collect(errors, exc)
    return rounds


def _contest(file: Path, limits: Limits) -> RoundResult:
    where = str(file)
    try:
        data = json.loads(file.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SourceError(where, f"not a JSON contest file: {exc}", None, "not_json") from None
    if not isinstance(data, dict):
        raise SourceError(where, "a contest file holds a JSON object")
    name = data.get("name")
    label = f"{where} (contest {name})" if isinstance(name, str) else where
    standings = data.get("standings")
    if not isinstance(standings, list):
        raise SourceError(label, "standings must be a list of [player, lo, hi]", "standings")
    explicit = []
    n = len(standings)
    for i, entry in enumerate(standings):
        ok = (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)
              and all(type(x) is int for x in entry[1:]) and 0 <= entry[1] <= entry[2] < n)
        if not ok:
            raise SourceError(label, f"entry must be [player, lo, hi] with 0 <= lo <= hi < {n}, got {entry!r}",
                              f"standings[{i}]", "bad_rank")
        explicit.append({"player": entry[0], "rank": entry[1] + 1})
    time_seconds = data.get("time_seconds")
    if not isinstance(time_seconds, (int, float)) or isinstance(time_seconds, bool) or not math.isfinite(time_seconds):
        raise SourceError(label, f"time_seconds must be a number, got {time_seconds!r}", "time_seconds")
    raw: dict[str, Any] = {
        "round_id": file.stem, "ladder": DEFAULT_LADDER, "occurred_at": time_seconds, "standings": explicit,
    }
    for key in ("weight", "perf_ceiling"):
        if key in data:
            raw[key] = data[key]
    return _accept(raw, Limits(limits.max_round_size, limits.max_message_bytes, limits.max_id_length, False), label)
