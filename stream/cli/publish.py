"""``stream publish FILE``: validate a file of rounds completely, then produce them to ``rounds``.

Inputs (by extension / kind):

* ``*.jsonl`` / ``*.ndjson`` (``.gz`` too): one ``RoundResult`` JSON object per line (blank lines
  skipped), read with :mod:`stream.batch.sources`;
* ``*.csv``: a header with ``round_id, ladder, player, rank`` and optionally ``occurred_at``,
  ``weight``, ``team`` and ``player_weight``; rows of one round share ``(ladder, round_id)`` (they
  need not be adjacent); rows of one round with the same ``team`` are one team entry (its rank
  given on every row); ``player_weight`` is the player's share of the match (partial play); a
  round without ``occurred_at`` gets the publish time;
* a directory: the authors' contest files (EbTech/Elo-MMR ``cache/<dataset>/<n>.json``), read
  with :mod:`stream.batch.sources`.

Everything is parsed with :func:`stream.contracts.parse_round` BEFORE anything is sent: the first
bad row is reported as ``file:line: field: message`` with exit code 2 and nothing is published.
Outcome-free rounds (``no_outcome``) are valid: they are published and recorded, nobody is rated.
Then each round goes to topic ``rounds`` (with ``TOPIC_PREFIX``), key = ladder, acks=all.
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer

from stream.connections import ConnectionConfigError, kafka_python_config
from stream.contracts import Limits, RoundRejected, RoundResult, parse_round
from stream.settings import Settings

#: Exit codes: bad input (nothing published) and a failed produce.
EXIT_INVALID = 2
EXIT_PRODUCE_FAILED = 3
EXIT_UNREACHABLE = 4
#: CSV columns: required and optional.
CSV_REQUIRED = ("round_id", "ladder", "player", "rank")
CSV_OPTIONAL = ("occurred_at", "weight")
CSV_PER_PLAYER = ("team", "player_weight")
"""Optional per-row columns: the player's team, and his share of the match."""
#: Extensions read as JSON lines.
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".gz")
#: Seconds to wait for every acknowledgement at the end.
FLUSH_TIMEOUT_S = 120.0
#: Topic name (before the prefix).
ROUNDS_TOPIC = "rounds"


class InvalidInput(ValueError):
    """A row that cannot be published: where (``file:line``), which field, why."""

    def __init__(self, location: str, field: str | None, message: str, reason: str = "invalid") -> None:
        super().__init__(f"{location}: {field + ': ' if field else ''}{message}")
        self.location = location
        self.field = field
        self.message = message
        self.reason = reason


@dataclass
class PublishSummary:
    """What ``stream publish`` did (its ``--json`` output)."""

    source: str
    topic: str
    rounds: int = 0
    no_outcome: int = 0
    standings: int = 0
    ladders: dict[str, int] = field(default_factory=dict)
    partitions: dict[int, int] = field(default_factory=dict)
    failed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "topic": self.topic, "rounds": self.rounds, "no_outcome": self.no_outcome,
                "standings": self.standings, "ladders": self.ladders,
                "partitions": {str(p): n for p, n in sorted(self.partitions.items())}, "failed": self.failed}


# ---------------------------------------------------------------- reading + validation


def _parse(raw: Any, limits: Limits, location: str, field_lines: dict[str, str] | None = None) -> tuple[RoundResult, bool]:
    """parse_round with the rejection turned into :class:`InvalidInput`; returns (round, outcome_free)."""
    try:
        return parse_round(raw, limits=limits), False
    except RoundRejected as exc:
        if exc.reason == "no_outcome" and exc.round is not None:
            return exc.round, True
        where = location
        if field_lines and exc.field:
            where = next((line for prefix, line in field_lines.items() if exc.field.startswith(prefix)), location)
        raise InvalidInput(where, exc.field, exc.message, exc.reason) from exc


def _csv_value(text: str) -> float | str:
    """A CSV cell as a number when it is one (epoch seconds, weight), else the text (RFC 3339)."""
    try:
        return float(text)
    except ValueError:
        return text


def read_csv(path: Path, limits: Limits, now: float) -> Iterator[tuple[RoundResult, bool]]:
    """Rows grouped into rounds by ``(ladder, round_id)``, in order of first appearance."""
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        missing = [c for c in CSV_REQUIRED if c not in header]
        if missing:
            raise InvalidInput(f"{path}:1", missing[0], f"CSV header lacks column(s) {', '.join(missing)}")
        rounds: dict[tuple[str, str], dict[str, Any]] = {}
        for row in reader:
            line = f"{path}:{reader.line_num}"
            key = (row["ladder"] or "default", row["round_id"])
            entry = rounds.setdefault(key, {"raw": {"round_id": row["round_id"], "ladder": key[0], "standings": []},
                                            "lines": {}, "first": line})
            raw = entry["raw"]
            for column in CSV_OPTIONAL:
                value = (row.get(column) or "").strip()
                if not value:
                    continue
                parsed = _csv_value(value)
                if column in raw and raw[column] != parsed:
                    raise InvalidInput(line, column, f"differs from an earlier row of round {key[1]!r} ({raw[column]!r})")
                raw[column] = parsed
            try:
                rank: Any = int(row["rank"])
            except (TypeError, ValueError):
                raise InvalidInput(line, "rank", f"not an integer: {row['rank']!r}") from None
            _add_standing(raw["standings"], entry["lines"], row, rank, line)
    for entry in rounds.values():
        raw = entry["raw"]
        raw.setdefault("occurred_at", now)
        # Longest prefixes first, so standings[12] is not matched by standings[1].
        lines = dict(sorted(entry["lines"].items(), key=lambda item: -len(item[0])))
        yield _parse(raw, limits, entry["first"], lines)


def _add_standing(standings: list[dict[str, Any]], lines: dict[str, str], row: dict[str, str], rank: int,
                  line: str) -> None:
    """One CSV row into the round's standings: an individual entry, or a member of its team's."""
    team = (row.get("team") or "").strip()
    share = (row.get("player_weight") or "").strip()
    member: Any = row["player"] if not share else {"player": row["player"], "weight": _csv_value(share)}
    if not team:
        lines[f"standings[{len(standings)}]"] = line
        standings.append({"player": row["player"], "rank": rank} if not share else {**member, "rank": rank})
        return
    for index, entry in enumerate(standings):
        if entry.get("team") == team:
            if entry["rank"] != rank:
                raise InvalidInput(line, "rank", f"team {team!r} has rank {entry['rank']} on an earlier row")
            lines[f"standings[{index}].players[{len(entry['players'])}]"] = line
            entry["players"].append(member)
            return
    lines[f"standings[{len(standings)}]"] = line
    standings.append({"team": team, "players": [member], "rank": rank})


def read_with_sources(path: Path, limits: Limits) -> Iterator[tuple[RoundResult, bool]]:
    """JSONL files and contest directories, through stream.batch.sources (validated completely)."""
    from stream.batch.sources import SourceError, read_rounds as read_source

    try:
        rounds = read_source(path, limits=limits)
    except SourceError as exc:
        raise InvalidInput(exc.where, exc.field, str(exc).removeprefix(f"{exc.where}: "), exc.reason) from None
    for round_ in rounds:
        yield round_, round_.is_outcome_free()


def read_rounds(path: Path, limits: Limits, now: float | None = None) -> list[tuple[RoundResult, bool]]:
    """Every round of ``path``, validated; raises :class:`InvalidInput` at the first bad row.

    Also rejects a round_id reused within the file for different content (``conflict``).
    """
    now = time.time() if now is None else now
    items: Iterable[tuple[RoundResult, bool]]
    if path.suffix.lower() == ".csv":
        items = read_csv(path, limits, now)
    elif path.is_dir() or path.suffix.lower() in JSONL_SUFFIXES:
        items = read_with_sources(path, limits)
    else:
        raise InvalidInput(str(path), None, "unknown input kind: expected .jsonl, .csv or a directory of contest files")
    out: list[tuple[RoundResult, bool]] = []
    seen: dict[tuple[str, str], str] = {}
    for round_, outcome_free in items:
        key = (round_.ladder, round_.round_id)
        digest = round_.content_hash()
        if seen.setdefault(key, digest) != digest:
            raise InvalidInput(f"{path}", "round_id", f"round {round_.round_id!r} of ladder {round_.ladder!r} appears twice with different content", "conflict")
        out.append((round_, outcome_free))
    return out


# ---------------------------------------------------------------- producing


def kafka_client_config(settings: Settings) -> dict[str, Any]:
    """kafka-python connection settings (bootstrap, TLS, SASL): :func:`stream.connections.kafka_python_config`."""
    return kafka_python_config(settings)


class RoundProducer:
    """kafka-python producer of RoundResults to ``rounds``: key = ladder, acks=all; a context manager."""

    def __init__(self, settings: Settings) -> None:
        from kafka import KafkaProducer

        self.topic = settings.topic(ROUNDS_TOPIC)
        self._producer = KafkaProducer(acks="all", max_request_size=settings.max_message_bytes,
                                       **kafka_client_config(settings))

    def send(self, round_: RoundResult) -> Any:
        """Queue one round; returns the future of its RecordMetadata."""
        return self._producer.send(self.topic, key=round_.ladder.encode(), value=round_.to_json().encode())

    def flush(self, timeout_s: float = FLUSH_TIMEOUT_S) -> None:
        self._producer.flush(timeout=timeout_s)

    def close(self) -> None:
        self._producer.close(timeout=FLUSH_TIMEOUT_S)

    def __enter__(self) -> "RoundProducer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def ensure_rounds_topic(settings: Settings) -> None:
    """Create ``rounds`` with ``PARTITIONS`` partitions if missing (a broker would otherwise auto-create it
    with its own default); on a cluster where we may not create topics this is left to the operator."""
    from stream.stack.topics import ensure_topics

    config = kafka_client_config(settings)
    ensure_topics(config.pop("bootstrap_servers"), {settings.topic(ROUNDS_TOPIC): settings.partitions}, **config)


def produce(settings: Settings, rounds: list[tuple[RoundResult, bool]], source: str, progress: bool) -> PublishSummary:
    """Send every round, wait for all acknowledgements, and summarise."""
    from tqdm import tqdm

    summary = PublishSummary(source=source, topic=settings.topic(ROUNDS_TOPIC))
    with RoundProducer(settings) as producer:
        futures = []
        for round_, outcome_free in tqdm(rounds, desc="publishing", unit="round", disable=not progress):
            futures.append(producer.send(round_))
            summary.rounds += 1
            summary.no_outcome += outcome_free
            summary.standings += round_.field_size
            summary.ladders[round_.ladder] = summary.ladders.get(round_.ladder, 0) + 1
        producer.flush()
        for future in futures:
            try:
                meta = future.get(timeout=FLUSH_TIMEOUT_S)
                summary.partitions[meta.partition] = summary.partitions.get(meta.partition, 0) + 1
            except Exception:  # the broker refused or timed out: counted, reported, non-zero exit
                summary.failed += 1
    return summary


def publish(
    file: Path = typer.Argument(..., exists=True, help="rounds: .jsonl, .csv, or a directory of contest files"),
    json_output: bool = typer.Option(False, "--json", help="print the summary as JSON"),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="show a progress bar on stderr"),
    dry_run: bool = typer.Option(False, "--dry-run", help="validate only, publish nothing"),
) -> None:
    """Validate every round of FILE, then publish them to the `rounds` topic (keyed by ladder)."""
    settings = Settings.from_env()
    try:
        rounds = read_rounds(file, Limits.from_settings(settings))
    except InvalidInput as exc:
        if json_output:
            typer.echo(json.dumps({"error": exc.reason, "location": exc.location, "field": exc.field,
                                   "message": exc.message}))
        typer.echo(f"error: {exc} — nothing published", err=True)
        raise typer.Exit(EXIT_INVALID) from None
    if dry_run:
        summary = PublishSummary(source=str(file), topic=settings.topic(ROUNDS_TOPIC), rounds=len(rounds),
                                 no_outcome=sum(free for _, free in rounds),
                                 standings=sum(r.field_size for r, _ in rounds))
    else:
        try:
            ensure_rounds_topic(settings)
        except Exception as exc:  # e.g. no CreateTopics permission: the topic is the operator's
            typer.echo(f"warning: could not ensure topic {settings.topic(ROUNDS_TOPIC)}: {exc}", err=True)
        from kafka.errors import KafkaError

        try:
            summary = produce(settings, rounds, str(file), progress)
        except (KafkaError, ConnectionConfigError) as exc:
            typer.echo(f"error: cannot reach Kafka at {settings.kafka_bootstrap}: {exc}", err=True)
            raise typer.Exit(EXIT_UNREACHABLE) from None
    if json_output:
        typer.echo(json.dumps(summary.to_dict()))
    else:
        typer.echo(f"{'validated' if dry_run else 'published'} {summary.rounds} rounds ({summary.no_outcome} outcome-free, "
                   f"{summary.standings} standings) to {summary.topic}" + (f"; {summary.failed} FAILED" if summary.failed else ""))
    if summary.failed:
        raise typer.Exit(EXIT_PRODUCE_FAILED)


def register(app: typer.Typer) -> None:
    """Add ``stream publish`` to the CLI."""
    app.command("publish")(publish)
