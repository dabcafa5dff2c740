"""``stream publish FILE``: validate a file of rounds completely (JSONL, CSV or contest files, read by
:mod:`stream.batch.sources`; formats in README.md), then produce them to ``rounds`` (key = ladder, acks=all).

Every bad row is reported (the first :data:`MAX_REPORTED_ERRORS`, all counted) as ``file:line: field:
message [reason]``, exit 2, and nothing is published. Outcome-free rounds are valid: published, recorded.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Iterator
from contextlib import closing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from stream.batch.sources import SourceError
from stream.cli.store_command import EXIT_BAD_INPUT as EXIT_INVALID, EXIT_UNREACHABLE as EXIT_UNREACHABLE, fail
from stream.connections import ConnectionConfigError, kafka_python_config
from stream.contracts import Limits, RoundRejected, RoundResult, parse_round
from stream.contracts.round import CONFLICT, NO_OUTCOME
from stream.pipeline.topics import ROUNDS
from stream.settings import Settings

if TYPE_CHECKING:
    from stream.contracts.correction import Correction

#: Exit code of a failed produce (bad input, nothing published: EXIT_INVALID).
EXIT_PRODUCE_FAILED = 3
#: ``--wait``: a round was rejected by the service (dead-lettered), or the wait ended first.
EXIT_REJECTED = 5
EXIT_TIMEOUT = 1
#: ``--wait``: default seconds to wait for the outcomes.
WAIT_TIMEOUT_S = 120.0
#: Bad rows / rounds listed before giving up (all are counted).
MAX_REPORTED_ERRORS = 20
#: "at line 1 column N" in a JSON decoder's message about a one-line record: the location gives the file's
#: line, so it is shown as a column only ("line 1" beside it would read as a second, contradicting line).
JSON_LINE_ONE = re.compile(r"at line 1 column (\d+)")
#: Extensions read as JSON lines.
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".gz")
#: Seconds to wait for every acknowledgement at the end.
FLUSH_TIMEOUT_S = 120.0


class InvalidFile(ValueError):
    """Every bad row or round of a file (``errors``, in file order); nothing of it may be published."""

    def __init__(self, errors: list[SourceError]) -> None:
        super().__init__(f"{len(errors)} bad row(s) or round(s)")
        self.errors = errors


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
    sent: list[tuple[int, int] | None] = field(default_factory=list)  # (partition, offset) of each round

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "topic": self.topic, "rounds": self.rounds, "no_outcome": self.no_outcome,
                "standings": self.standings, "ladders": self.ladders,
                "partitions": {str(p): n for p, n in sorted(self.partitions.items())}, "failed": self.failed}


# ---------------------------------------------------------------- reading + validation


def read_csv(path: Path, limits: Limits, now: float, errors: list[SourceError]) -> Iterator[RoundResult]:
    """Rows grouped into rounds (:func:`stream.batch.sources.csv_rounds`, the one CSV reader), in order
    of first appearance; a bad row goes to ``errors`` (its round is then not checked further)."""
    from stream.batch.sources import csv_rounds

    for entry in csv_rounds(path, now):
        found = entry.errors
        if found and not entry.raw:  # the header, or an unreadable file: unusable as a whole
            raise found[0]
        if found:
            errors += found
            continue
        # Longest prefixes first, so standings[12] is not matched by standings[1].
        lines = dict(sorted(entry.lines.items(), key=lambda item: -len(item[0])))
        try:
            yield parse_round(entry.raw, limits=limits)
        except RoundRejected as exc:
            if exc.reason == NO_OUTCOME and exc.round is not None:  # valid: published, recorded
                yield exc.round
                continue
            where = next((line for prefix, line in lines.items() if exc.field and exc.field.startswith(prefix)),
                         entry.first)
            errors.append(SourceError(where, exc.message, exc.field, exc.reason))


def read_with_sources(path: Path, limits: Limits, errors: list[SourceError],
                      ignored: list[SourceError] | None = None) -> list[RoundResult]:
    """JSONL files and contest directories, through stream.batch.sources (validated completely; the
    bad lines or files go to ``errors``, fields the service would ignore to ``ignored``)."""
    from stream.batch.sources import read_rounds as read_source

    found: list[SourceError] = []
    unused: list[SourceError] | None = [] if ignored is not None else None
    try:
        rounds = read_source(path, limits=limits, rejected=found, ignored=unused)
    except SourceError as exc:  # the file itself cannot be read
        found.append(exc)
        rounds = []
    for error in found:
        error.message = JSON_LINE_ONE.sub(r"at column \1", error.message.removeprefix(f"{error.reason}: "))
    errors += found
    if ignored is not None:
        ignored += unused or []
    return rounds


def read_rounds(path: Path, limits: Limits, now: float | None = None,
                ignored: list[SourceError] | None = None) -> list[RoundResult]:
    """Every round of ``path``, validated (a round_id reused for other content is a ``conflict``); raises
    :class:`InvalidFile` listing every bad row or round (:class:`SourceError`: the file is unusable);
    ``ignored`` lists what the service would accept but ignore (STRICT_SCHEMA off)."""
    from stream.batch.sources import unknown_csv_columns

    now = time.time() if now is None else now
    errors: list[SourceError] = []
    items: Iterable[RoundResult]
    if path.suffix.lower() == ".csv":
        if ignored is not None:
            ignored += unknown_csv_columns(path)
        items = read_csv(path, limits, now, errors)
    elif path.is_dir() or path.suffix.lower() in JSONL_SUFFIXES:
        items = read_with_sources(path, limits, errors, ignored)
    else:
        raise SourceError(str(path), "unknown input kind: expected .jsonl, .csv or a directory of contest files",
                          None, "invalid")
    out: list[RoundResult] = []
    seen: dict[tuple[str, str], str] = {}
    for round_ in items:
        key = (round_.ladder, round_.round_id)
        digest = round_.content_hash()
        if seen.setdefault(key, digest) != digest:
            errors.append(SourceError(f"{path}", f"round {round_.round_id!r} of ladder {round_.ladder!r} "
                                      "appears twice with different content", "round_id", CONFLICT))
        out.append(round_)
    if errors:
        raise InvalidFile(errors)
    return out


# ---------------------------------------------------------------- producing


class RoundProducer:
    """kafka-python producer of RoundResults to ``rounds`` (or of corrections to ``topic``): key = ladder,
    acks=all (``with closing(...)``)."""

    def __init__(self, settings: Settings, topic: str = ROUNDS) -> None:
        from kafka import KafkaProducer

        self.topic = settings.topic(topic)
        self._producer = KafkaProducer(acks="all", max_request_size=settings.max_message_bytes,
                                       **kafka_python_config(settings))

    def send(self, round_: RoundResult | Correction) -> Any:
        """Queue one message; returns the future of its RecordMetadata."""
        return self._producer.send(self.topic, key=round_.ladder.encode(), value=round_.to_json().encode())

    def flush(self, timeout_s: float = FLUSH_TIMEOUT_S) -> None:
        self._producer.flush(timeout=timeout_s)

    def close(self) -> None:
        self._producer.close(timeout=FLUSH_TIMEOUT_S)


def ensure_topic(settings: Settings, topic: str) -> None:
    """Create ``topic`` (before the prefix) with ``PARTITIONS`` partitions if missing (a broker would
    auto-create it with its own default); where we may not create topics, a warning: it is the operator's."""
    from stream.pipeline.topics import ensure_topics

    config = kafka_python_config(settings)
    try:
        ensure_topics(config.pop("bootstrap_servers"), {settings.topic(topic): settings.partitions}, **config)
    except Exception as exc:  # noqa: BLE001 - e.g. no CreateTopics permission
        typer.echo(f"warning: could not ensure topic {settings.topic(topic)}: {exc}", err=True)


def produce(settings: Settings, rounds: list[tuple[RoundResult, bool]], summary: PublishSummary,
            progress: bool) -> None:
    """Send every round, wait for all acknowledgements, and add to ``summary`` (ladders, partitions, failures)."""
    from tqdm import tqdm

    with closing(RoundProducer(settings)) as producer:
        futures = []
        for round_, _ in tqdm(rounds, desc="publishing", unit="round", disable=not progress):
            futures.append(producer.send(round_))
            summary.ladders[round_.ladder] = summary.ladders.get(round_.ladder, 0) + 1
        producer.flush()
        for future in futures:
            try:
                meta = future.get(timeout=FLUSH_TIMEOUT_S)
                summary.partitions[meta.partition] = summary.partitions.get(meta.partition, 0) + 1
                summary.sent.append((meta.partition, meta.offset))
            except Exception:  # the broker refused or timed out: counted, reported, non-zero exit
                summary.failed += 1
                summary.sent.append(None)


def publish(
    file: Path = typer.Argument(..., exists=True, help="rounds: .jsonl, .csv, or a directory of contest files"),
    json_output: bool = typer.Option(False, "--json", help="print the summary as JSON"),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="show a progress bar on stderr"),
    dry_run: bool = typer.Option(False, "--dry-run", help="validate only, publish nothing"),
    wait: bool = typer.Option(False, "--wait", help="then wait for each round's outcome (rated, duplicate, "
                              f"rejected with its reason); exit {EXIT_REJECTED} if any was rejected"),
    wait_timeout: float = typer.Option(WAIT_TIMEOUT_S, "--wait-timeout", help=f"--wait: seconds to wait (exit "
                                       f"{EXIT_TIMEOUT} if rounds are still pending then)"),
) -> None:
    """Validate every round of FILE, then publish them to the `rounds` topic (keyed by ladder)."""
    settings = Settings.from_env(connect=not dry_run)  # --dry-run is offline: any number of stacks may run
    ignored: list[SourceError] = []
    try:
        found = read_rounds(file, Limits.from_settings(settings), ignored=ignored)
    except SourceError as exc:
        _report_invalid(file, [exc], json_output)
    except InvalidFile as exc:
        _report_invalid(file, exc.errors, json_output)
    from stream.engine.ladders import parse_ladders

    # outcome-free as the stream decides it, by the ladder's model (LADDERS: a bad one raises LaddersError, exit 2)
    ladders = parse_ladders(settings.ladders, engine_preset=settings.engine_preset)
    rounds = [(r, r.is_outcome_free(ladders.of(r.ladder).draws_rate)) for r in found]
    warn_ignored(ignored)
    waited = None
    summary = PublishSummary(source=str(file), topic=settings.topic(ROUNDS), rounds=len(rounds),
                             no_outcome=sum(free for _, free in rounds), standings=sum(r.field_size for r, _ in rounds))
    if not dry_run:
        from stream.cli.reach import require

        require(settings, kafka=True, redis=wait, write=True)
        if wait:  # Redis is at hand: a round of a ladder nobody rated yet starts one for good (a typo?)
            note_new_ladders(settings, sorted({r.ladder for r, _ in rounds}))
        ensure_topic(settings, ROUNDS)
        from kafka.errors import KafkaError

        from stream.connections import redis_connection_errors, redis_error_message

        try:
            if wait:
                from stream.cli.outcomes import OutcomeWatcher

                with closing(OutcomeWatcher(settings, [r for r, _ in rounds])) as watcher:  # before anything is sent
                    produce(settings, rounds, summary, progress)
                    waited = watcher.wait(summary.sent, wait_timeout)
            else:
                produce(settings, rounds, summary, progress)
        except (KafkaError, ConnectionConfigError) as exc:
            fail(f"cannot reach Kafka at {settings.kafka_bootstrap}: {exc}", EXIT_UNREACHABLE)
        except redis_connection_errors() as exc:  # --wait reads the outcomes from Redis
            fail(redis_error_message(settings, exc), EXIT_UNREACHABLE)
    if json_output:
        from stream.cli.outcomes import counts

        extra = {} if waited is None else {"outcomes": counts(waited), "rounds_outcome": [asdict(o) for o in waited]}
        typer.echo(json.dumps(summary.to_dict() | extra))
    else:
        n = summary.rounds
        typer.echo(f"{'validated' if dry_run else 'published'} {n} round{'' if n == 1 else 's'} "
                   f"({summary.no_outcome} outcome-free, {summary.standings} standings) to {summary.topic}"
                   + (f"; {summary.failed} FAILED" if summary.failed else ""))
        if waited is not None:
            _echo_outcomes(waited)
    if summary.failed:
        raise typer.Exit(EXIT_PRODUCE_FAILED)
    if waited is not None:
        from stream.cli.outcomes import PENDING, REJECTED

        if any(o.outcome == REJECTED for o in waited):
            raise typer.Exit(EXIT_REJECTED)
        if any(o.outcome == PENDING for o in waited):
            raise typer.Exit(EXIT_TIMEOUT)


#: Ignored fields listed before "... and N more".
MAX_REPORTED_WARNINGS = 5


def warn_ignored(ignored: list[SourceError]) -> None:
    """Say (stderr) what the service will ignore: an unknown field is often a typo (``occured_at``)."""
    if not ignored:
        return
    typer.echo(f"warning: {len(ignored)} round(s) or header(s) carry what the service ignores "
               "(STRICT_SCHEMA=true would reject it):", err=True)
    for item in ignored[:MAX_REPORTED_WARNINGS]:
        typer.echo(f"  {item.where}: {item.message}", err=True)
    if len(ignored) > MAX_REPORTED_WARNINGS:
        typer.echo(f"  … and {len(ignored) - MAX_REPORTED_WARNINGS} more", err=True)


def note_new_ladders(settings: Settings, ladders: list[str]) -> None:
    """One ``note:`` line when the file's rounds name ladders the service has not rated yet, with the
    known ladders that look like them (publishing them creates those ladders)."""
    import difflib

    from stream.cli.store_command import run_on_redis
    from stream.store import queries

    existing = run_on_redis(settings, queries.ladders)
    new = [name for name in ladders if name not in existing]
    if not new or not existing:
        return
    close = {name: difflib.get_close_matches(name, existing, n=1, cutoff=0.6) for name in new}
    hints = [f"{name!r}" + (f" (did you mean {close[name][0]!r}?)" if close[name] else "") for name in new]
    typer.echo(f"note: new ladder(s) {', '.join(hints)}: their rounds start ladders of their own; "
               f"known: {', '.join(existing[:20])}", err=True)


def _report_invalid(file: Path, errors: list[SourceError], json_output: bool) -> NoReturn:
    """Every bad row (up to MAX_REPORTED_ERRORS, all counted), then exit: nothing was published."""
    shown = errors[:MAX_REPORTED_ERRORS]
    if json_output:  # the first error's fields at the top, every listed one under "errors"
        typer.echo(json.dumps({**errors[0].to_dict(), "count": len(errors), "errors": [e.to_dict() for e in shown]}))
    what = "bad row or round" if len(errors) == 1 else "bad rows or rounds"
    typer.echo(f"error: {len(errors)} {what} in {file}; nothing published:", err=True)
    for e in shown:
        typer.echo(f"  {e.report()}", err=True)
    if len(errors) > len(shown):
        typer.echo(f"  … and {len(errors) - len(shown)} more", err=True)
    raise typer.Exit(EXIT_INVALID)


def _echo_outcomes(outcomes: list[Any]) -> None:
    """The counts, then one line per round that was not simply rated."""
    from stream.cli.outcomes import NO_OUTCOME, RATED, counts

    typer.echo("outcomes: " + ", ".join(f"{n} {name}" for name, n in counts(outcomes).items()))
    for o in outcomes:
        if o.outcome in (RATED, NO_OUTCOME):
            continue
        detail = f": {o.reason}" + (f" ({o.field})" if o.field else "") + (f" {o.message}" if o.message else "") \
            if o.reason else (f": {o.message}" if o.message else "")
        typer.echo(f"  {o.outcome} {o.ladder}/{o.round_id}{detail}")


def register(app: typer.Typer) -> None:
    """Add ``stream publish`` to the CLI."""
    app.command("publish")(publish)
