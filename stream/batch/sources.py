"""Input files of a batch replay, validated completely before anything is rated or written.

* JSONL (``.jsonl`` / ``.json`` lines, ``.gz`` accepted): one RoundResult per non-blank line.
* CSV (what ``stream publish`` and ``stream backfill`` take; :func:`csv_rounds`, the one CSV
  reader): columns ``round_id, ladder, player, rank`` and optionally ``occurred_at``, ``weight``,
  ``team``, ``player_weight``; a round's rows share ``(ladder, round_id)``, a ``team``'s rows are
  one entry; no ``occurred_at``: the time the file is read.
* A directory of the authors' contest files (EbTech/Elo-MMR ``cache/<dataset>/0.json, 1.json``):
  ``{"name", "time_seconds", "standings": [[player, lo, hi], ...], "weight"?, "perf_ceiling"?}``,
  0-based inclusive tie ranges; ladder ``default``, ``round_id`` = file stem, rank = lo + 1.

Each round is accepted as a ``rounds`` message is (``parse_round``); outcome-free rounds are valid.
Anything else raises :class:`SourceError` (file, line or round, field, reason) or, with
``rejected``, is listed there and left out (as the stream dead-letters it).
"""

from __future__ import annotations

import csv
import gzip
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from stream.contracts import DEFAULT_LADDER, Limits, RoundRejected, RoundResult, parse_round
from stream.contracts.round import NO_OUTCOME, UNKNOWN_FIELD


class SourceError(ValueError):
    """Bad input: ``where`` (file:line or file), ``field`` and ``reason`` of the first problem."""

    def __init__(self, where: str, message: str, field: str | None = None, reason: str = "schema") -> None:
        super().__init__(f"{where}: {message}" + (f" (field {field})" if field else ""))
        self.message = message
        self.where = where
        self.field = field
        self.reason = reason

    def report(self) -> str:
        """``where: field: message [reason]``: how ``stream publish`` and ``backfill`` list a bad row."""
        return f"{self.where}: {self.field + ': ' if self.field else ''}{self.message} [{self.reason}]"

    def to_dict(self) -> dict[str, Any]:
        return {"error": self.reason, "location": self.where, "field": self.field, "message": self.message}


def read_rounds(path: Path, *, limits: Limits | None = None, rejected: list[SourceError] | None = None,
                ignored: list[SourceError] | None = None) -> list[RoundResult]:
    """All rounds of ``path`` (JSONL, CSV or a contest directory), in order; invalid ones into ``rejected``
    if given; what the service would ignore (STRICT_SCHEMA off) into ``ignored``, one per round or file."""
    limits = limits or Limits()
    if path.is_dir():
        return read_contest_dir(path, limits=limits, rejected=rejected)
    if not path.exists():
        raise SourceError(str(path), "no such file or directory")
    if path.suffix.lower() == ".csv":
        return read_csv(path, limits=limits, rejected=rejected, ignored=ignored)
    return read_jsonl(path, limits=limits, rejected=rejected, ignored=ignored)


#: CSV columns: required, optional per round, optional per row (the player's team, his share of the match).
CSV_REQUIRED = ("round_id", "ladder", "player", "rank")
CSV_OPTIONAL = ("occurred_at", "weight")
CSV_PER_PLAYER = ("team", "player_weight")


@dataclass
class CsvRound:
    """One round's rows of a CSV file: the RoundResult JSON they make, the line of its first row and
    of each standing (``standings[i]`` / ``standings[i].players[j]``), and each bad row's problem."""

    raw: dict[str, Any]
    first: str
    lines: dict[str, str] = field(default_factory=dict)
    errors: list[SourceError] = field(default_factory=list)


def csv_rounds(path: Path, now: float | None = None) -> Iterator[CsvRound]:
    """The rounds of a CSV file by ``(ladder, round_id)`` in order of first appearance, not yet
    validated; a bad header or an unreadable file: one :class:`CsvRound` with an empty ``raw``."""
    now = time.time() if now is None else now
    rounds: dict[tuple[str, str], CsvRound] = {}
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            header = reader.fieldnames or []
            missing = [c for c in CSV_REQUIRED if c not in header]
            if missing:
                yield CsvRound({}, f"{path}:1", errors=[SourceError(f"{path}:1", f"CSV header lacks column(s) "
                                                                    f"{', '.join(missing)}", missing[0], "invalid")])
                return
            for row in reader:
                line = f"{path}:{reader.line_num}"
                key = (row["ladder"] or DEFAULT_LADDER, row["round_id"])
                entry = rounds.setdefault(key, CsvRound({"round_id": row["round_id"], "ladder": key[0],
                                                         "standings": []}, line))
                problem = _csv_row(entry, row, line, key)
                if problem is not None:
                    entry.errors.append(problem)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        yield CsvRound({}, f"{path}:1", errors=[SourceError(str(path), f"cannot read: {exc}")])
        return
    for entry in rounds.values():
        entry.raw.setdefault("occurred_at", now)
        yield entry


def _csv_value(text: str) -> float | str:
    """A CSV cell as a number when it is one (epoch seconds, weight), else the text (RFC 3339)."""
    try:
        return float(text)
    except ValueError:
        return text


def _csv_row(entry: CsvRound, row: dict[str, str], line: str, key: tuple[str, str]) -> SourceError | None:
    """Add one CSV row to its round; the problem of a bad cell (None when the row is good)."""
    raw = entry.raw
    for column in CSV_OPTIONAL:
        value = (row.get(column) or "").strip()
        if not value:
            continue
        parsed = _csv_value(value)
        if column in raw and raw[column] != parsed:
            return SourceError(line, f"differs from an earlier row of round {key[1]!r} ({raw[column]!r})", column,
                               "invalid")
        raw[column] = parsed
    try:
        rank = int(row["rank"])
    except (TypeError, ValueError):
        return SourceError(line, f"not an integer: {row['rank']!r}", "rank", "bad_rank")
    return _add_standing(raw["standings"], entry.lines, row, rank, line)


def _add_standing(standings: list[dict[str, Any]], lines: dict[str, str], row: dict[str, str], rank: int,
                  line: str) -> SourceError | None:
    """One CSV row into the round's standings: an individual entry, or a member of its team's."""
    team = (row.get("team") or "").strip()
    share = (row.get("player_weight") or "").strip()
    member: Any = row["player"] if not share else {"player": row["player"], "weight": _csv_value(share)}
    if not team:
        lines[f"standings[{len(standings)}]"] = line
        standings.append({"player": row["player"], "rank": rank} if not share else {**member, "rank": rank})
        return None
    for index, entry in enumerate(standings):
        if entry.get("team") == team:
            if entry["rank"] != rank:
                return SourceError(line, f"team {team!r} has rank {entry['rank']} on an earlier row", "rank", "invalid")
            lines[f"standings[{index}].players[{len(entry['players'])}]"] = line
            entry["players"].append(member)
            return None
    lines[f"standings[{len(standings)}]"] = line
    standings.append({"team": team, "players": [member], "rank": rank})
    return None


def unknown_csv_columns(path: Path) -> list[SourceError]:
    """The header's columns no CSV reader uses, as one ``unknown_field`` problem (ignored: a typo such
    as ``occured_at`` is silent)."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            header = next(csv.reader(handle), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return []
    unknown = [c for c in header if c not in CSV_REQUIRED + CSV_OPTIONAL + CSV_PER_PLAYER]
    return [SourceError(f"{path}:1", f"unknown column(s) ignored: {', '.join(unknown)}", unknown[0],
                        UNKNOWN_FIELD)] if unknown else []


def read_csv(path: Path, *, limits: Limits, rejected: list[SourceError] | None = None,
             ignored: list[SourceError] | None = None) -> list[RoundResult]:
    """Rounds of a CSV file (:func:`csv_rounds`), each accepted as a ``rounds`` message would be."""
    rounds: list[RoundResult] = []
    if ignored is not None:
        ignored += unknown_csv_columns(path)
    for entry in csv_rounds(path):
        if entry.errors:
            if rejected is None or not entry.raw:
                raise entry.errors[0]
            rejected.append(entry.errors[0])  # one rejection per round, as the stream dead-letters it
            continue
        _accept(entry.raw, limits, entry.first, rounds, rejected, ignored)
    return rounds


def _accept(raw: Any, limits: Limits, where: str, rounds: list[RoundResult],
            rejected: list[SourceError] | None, ignored: list[SourceError] | None = None) -> None:
    """Append the round of ``raw`` to ``rounds``, or its rejection to ``rejected`` (else raise it)."""
    if ignored is not None and not limits.strict:
        try:
            rounds.append(parse_round(raw, limits=replace(limits, strict=True)))
            return
        except RoundRejected as exc:
            if exc.reason == UNKNOWN_FIELD:
                ignored.append(SourceError(_label(raw, where), f"{exc.message} ignored", exc.field, UNKNOWN_FIELD))
    try:
        rounds.append(parse_round(raw, limits=limits))
        return
    except RoundRejected as exc:
        if exc.reason == NO_OUTCOME and exc.round is not None:
            rounds.append(exc.round)
            return
        error = SourceError(_label(raw, where), f"{exc.reason}: {exc.message}", exc.field, exc.reason)
    if rejected is None:
        raise error
    rejected.append(error)


def _label(raw: Any, where: str) -> str:
    """``where``, with the round id of a rejected message if it has a readable one."""
    if isinstance(raw, bytes):
        try:
            raw = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError):  # not UTF-8, not JSON, a 4,300+ digit integer, too deep
            return where
    round_id = raw.get("round_id") if isinstance(raw, dict) else None
    readable = isinstance(round_id, str) and round_id.isprintable() and len(round_id) <= 200
    return f"{where} (round {round_id})" if readable else where


def read_jsonl(path: Path, *, limits: Limits, rejected: list[SourceError] | None = None,
               ignored: list[SourceError] | None = None) -> list[RoundResult]:
    """Rounds of a JSONL file, one per non-blank line (its bytes, as a ``rounds`` message)."""
    opener = gzip.open if path.suffix == ".gz" else open
    rounds: list[RoundResult] = []
    try:
        with opener(path, "rb") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                _accept(line.rstrip(b"\r\n"), limits, f"{path}:{lineno}", rounds, rejected, ignored)
    except (OSError, EOFError) as exc:  # unreadable file, truncated or corrupt gzip
        raise SourceError(str(path), f"cannot read: {exc}") from None
    return rounds


def read_contest_dir(path: Path, *, limits: Limits, rejected: list[SourceError] | None = None) -> list[RoundResult]:
    """Rounds of a directory of the authors' ``<n>.json`` contest files, in numeric order."""
    files = sorted((f for f in path.iterdir() if f.suffix == ".json" and f.stem.isdigit()), key=lambda f: int(f.stem))
    if not files:
        raise SourceError(str(path), "no contest files (0.json, 1.json, ...) in this directory")
    rounds: list[RoundResult] = []
    for f in files:
        try:
            _contest(f, limits, rounds, rejected)
        except SourceError as exc:
            if rejected is None:
                raise
            rejected.append(exc)
    return rounds


def _contest(file: Path, limits: Limits, rounds: list[RoundResult], rejected: list[SourceError] | None) -> None:
    where = str(file)
    try:
        data = json.loads(file.read_bytes().decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, a 4,300+ digit integer, too deep
        raise SourceError(where, f"not a JSON contest file: {str(exc)[:200]}", None, "not_json") from None
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
    if not isinstance(time_seconds, (int, float)) or isinstance(time_seconds, bool):  # range: parse_round
        raise SourceError(label, f"time_seconds must be a number, got {time_seconds!r}", "time_seconds")
    raw: dict[str, Any] = {
        "round_id": file.stem, "ladder": DEFAULT_LADDER, "occurred_at": time_seconds, "standings": explicit,
    }
    for key in ("weight", "perf_ceiling"):
        if key in data:
            raw[key] = data[key]
    _accept(raw, replace(limits, strict=False), label, rounds, rejected)
