"""``stream queue``: join and cancel matchmaking tickets, a queue's or a ticket's status, and watch
a queue's matches and ticket events.

* ``stream queue join QUEUE P1 [P2 ...] [--ticket ID] [--wait S]``: publish a join (a party of the
  players, on one team) to ``match-tickets``, keyed by the queue; prints the ticket id. With
  ``--wait``, waits up to S seconds for the ticket's outcome (its status in Redis) and prints it.
* ``stream queue cancel QUEUE TICKET``: publish a cancel.
* ``stream queue status QUEUE [TICKET]``: the queue's state (waiting, wait p50/p90/p99, quality of
  recent matches) or one ticket's status, from Redis; ``--json`` for the read API's documents.
* ``stream queue watch QUEUE``: follow ``matches`` and ``ticket-events`` of the queue.

A ticket the worker refuses (bad shape, unknown queue, party too large) goes to
``match-tickets-dlq``; ``join`` checks the party's shape first (and, when QUEUES is set here, the
queue and its team size) and exits 1 with the reason instead of publishing it.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import typer

from stream.cli.follow import follow_records, print_lines
from stream.cli.publish import EXIT_UNREACHABLE
from stream.cli.store_command import EXIT_NOT_FOUND, run_on_redis
from stream.contracts import Limits, RoundRejected
from stream.contracts.tickets import FINAL_STATUSES, TicketCancel, TicketJoin, check_party, parse_ticket
from stream.pipeline.topics import MATCH_TICKETS, MATCHES, TICKET_EVENTS
from stream.connections import kafka_python_config
from stream.settings import Settings
from stream.store.matchmaking import queue_state, ticket_status

queue_app = typer.Typer(no_args_is_help=True)


@queue_app.callback()
def _queue() -> None:
    """Matchmaking: join and cancel tickets, a queue's state, its matches as they form."""

EXIT_REJECTED = 1
FLUSH_TIMEOUT_S = 30.0


def _publish(settings: Settings, queue: str, value: str) -> None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    try:
        producer = KafkaProducer(acks="all", **kafka_python_config(settings))
        try:
            producer.send(settings.topic(MATCH_TICKETS), key=queue.encode(), value=value.encode()).get(
                timeout=FLUSH_TIMEOUT_S)
        finally:
            producer.close(timeout=FLUSH_TIMEOUT_S)
    except KafkaError as exc:
        typer.echo(f"error: cannot reach Kafka at {settings.kafka_bootstrap}: {exc}", err=True)
        raise typer.Exit(EXIT_UNREACHABLE) from None


def _checked(settings: Settings, raw: str) -> TicketJoin | TicketCancel:
    """The ticket as the worker validates it (its shape; the queue and team size when QUEUES is set)."""
    try:
        ticket = parse_ticket(raw, limits=Limits.from_settings(settings))
        if settings.queues.strip():
            from stream.pipeline.context import load_ladders, load_queues

            queues = load_queues(settings, load_ladders(settings))
            check_party(ticket, queues={name: q.team_size for name, q in queues.items()})
    except RoundRejected as exc:
        typer.echo(f"error: {exc.reason}: {exc.message}", err=True)
        raise typer.Exit(EXIT_REJECTED) from None
    return ticket


@queue_app.command("join")
def join(queue: str = typer.Argument(..., help="the queue (a QUEUES key)"),
         players: list[str] = typer.Argument(..., help="the party: 1..team_size player ids, kept on one team"),
         ticket: str = typer.Option("", "--ticket", help="the ticket id (idempotency key); default: a new uuid"),
         wait: float = typer.Option(0.0, "--wait", help="wait up to this many seconds for the ticket's outcome"),
         json_output: bool = typer.Option(False, "--json", help="print the ticket's status as JSON")) -> None:
    """Queue a party of players: publish a join ticket to match-tickets."""
    settings = Settings.from_env()
    ticket_id = ticket or f"t-{uuid.uuid4().hex}"
    body = TicketJoin(ticket_id, queue, tuple(players)).to_json()
    _checked(settings, body)
    _publish(settings, queue, body)
    typer.echo(ticket_id)
    if wait > 0:
        status = _wait_outcome(settings, queue, ticket_id, wait)
        if status is None:
            typer.echo(f"timeout: no outcome within {wait:g}s", err=True)
            raise typer.Exit(EXIT_REJECTED)
        typer.echo(json.dumps(status, separators=(",", ":")) if json_output else _status_line(ticket_id, status))


def _wait_outcome(settings: Settings, queue: str, ticket_id: str, wait: float) -> dict[str, Any] | None:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        status = run_on_redis(settings, lambda client: ticket_status(client, queue, ticket_id))
        if status is not None and status.get("status") in FINAL_STATUSES:
            return status
        time.sleep(0.2)
    return None


@queue_app.command("cancel")
def cancel(queue: str = typer.Argument(..., help="the queue"),
           ticket: str = typer.Argument(..., help="the ticket id to cancel")) -> None:
    """Cancel a ticket (honoured if no tick took it yet; else its ticket event says too_late)."""
    settings = Settings.from_env()
    body = TicketCancel(ticket, queue).to_json()
    _checked(settings, body)
    _publish(settings, queue, body)
    typer.echo(f"cancel of {ticket} published")


def _status_line(ticket_id: str, status: dict[str, Any]) -> str:
    parts = [f"{ticket_id}: {status.get('status')}"]
    if status.get("match_id"):
        parts.append(f"match {status['match_id']}")
    if status.get("reason"):
        parts.append(f"reason {status['reason']}")
    if status.get("wait") is not None:
        parts.append(f"wait {float(status['wait']):.2f}s")
    elif status.get("since") is not None:
        parts.append(f"waiting {max(0.0, time.time() - float(status['since'])):.1f}s")
    return "  ".join(parts)


def _fmt(value: float | None, unit: str = "") -> str:
    return "-" if value is None else f"{value:.3f}{unit}"


@queue_app.command("status")
def status(queue: str = typer.Argument(..., help="the queue"),
           ticket: str = typer.Argument("", help="a ticket id: its status instead of the queue's"),
           json_output: bool = typer.Option(False, "--json", help="the read API's JSON document")) -> None:
    """A queue's state (waiting, waits, recent match quality) or one ticket's status."""
    settings = Settings.from_env()
    if ticket:
        found = run_on_redis(settings, lambda client: ticket_status(client, queue, ticket))
        if found is None:
            typer.echo(f"no ticket {ticket!r} in queue {queue!r}", err=True)
            raise typer.Exit(EXIT_NOT_FOUND)
        typer.echo(json.dumps({"ticket_id": ticket, "queue": queue, **found}) if json_output
                   else _status_line(ticket, found))
        return
    summary = run_on_redis(settings, lambda client: queue_state(client, queue)).summary(queue)
    if json_output:
        typer.echo(json.dumps(summary, indent=2))
        return
    wait, quality = summary["wait_s"], summary["quality"]
    typer.echo(f"queue {queue}: {summary['tickets_waiting']} ticket(s) waiting ({summary['players_waiting']} players), "
               f"{summary['matches_in_play']} match(es) in play")
    typer.echo(f"wait (last {wait['tickets']} matched tickets): p50 {_fmt(wait['p50'], 's')}  "
               f"p90 {_fmt(wait['p90'], 's')}  p99 {_fmt(wait['p99'], 's')}")
    typer.echo(f"quality (last {quality['matches']} matches): mean {_fmt(quality['mean'])}  p10 {_fmt(quality['p10'])}  "
               f"p50 {_fmt(quality['p50'])}")


def follow(settings: Settings, queue: str, *, from_beginning: bool, deadline: float | None) -> Iterator[tuple[str, dict[str, Any]]]:
    """(topic kind, event) of ``matches`` and ``ticket-events`` records keyed by ``queue``."""
    for kind, key, event in follow_records(settings, [MATCHES, TICKET_EVENTS], from_beginning=from_beginning,
                                           deadline=deadline):
        if key == queue.encode():
            yield kind, event


def _watch_line(kind: str, event: dict[str, Any]) -> str:
    if kind == MATCHES:
        teams = " vs ".join("+".join(team) for team in event["teams"])
        odds = "/".join(f"{p:.2f}" for p in event["win_probability"])
        return f"match {event['match_id']}  {teams}  quality {event['quality']:.3f}  win {odds}"
    return _status_line(event["ticket_id"], event)


@queue_app.command("watch")
def watch(queue: str = typer.Argument(..., help="the queue"),
          from_beginning: bool = typer.Option(False, "--from-beginning", help="start at the oldest stored event"),
          json_output: bool = typer.Option(False, "--json", help="one JSON object per line: {topic, event}"),
          max_events: int = typer.Option(0, "--max-events", help="exit after this many events (0: never)"),
          timeout: float = typer.Option(0.0, "--timeout", help="exit after this many seconds (0: never)")) -> None:
    """Follow a queue's matches and ticket events as they are published."""
    settings = Settings.from_env()
    deadline = time.monotonic() + timeout if timeout > 0 else None
    print_lines(settings, (json.dumps({"topic": kind, "event": event}, separators=(",", ":")) if json_output
                           else _watch_line(kind, event)
                           for kind, event in follow(settings, queue, from_beginning=from_beginning, deadline=deadline)),
                max_events=max_events, timeout_exit=EXIT_REJECTED)


def register(app: typer.Typer) -> None:
    app.add_typer(queue_app, name="queue")
