"""``stream void LADDER ROUND_ID`` and ``stream amend FILE``: publish a correction to ``corrections``,
validated here as the worker validates it (exit 2, nothing published); ``--wait`` reads the outcome
the worker records in Redis.
"""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import closing
from pathlib import Path
from typing import Annotated, Any

import typer

from stream.cli.publish import EXIT_PRODUCE_FAILED, EXIT_REJECTED, EXIT_TIMEOUT, RoundProducer, ensure_topic
from stream.cli.store_command import EXIT_BAD_INPUT as EXIT_INVALID, fail, run_with_store
from stream.contracts import Limits, RoundRejected
from stream.contracts.round import CONFLICT
from stream.contracts.correction import AMEND, VOID, Correction, parse_correction
from stream.pipeline.topics import CORRECTIONS
from stream.settings import Settings
from stream.store import corrections as ledger
from stream.store.store import Store
from stream.cli.output import Ladder

WAIT_TIMEOUT_S = 300.0
"""``--wait``: default seconds to wait for the outcome (a re-rate of a long history takes a while)."""
POLL_S = 0.2


def register(app: typer.Typer) -> None:
    """Add ``stream void`` and ``stream amend`` to the CLI app."""
    app.command("void")(void_command)
    app.command("amend")(amend_command)


ReasonOption = Annotated[str, typer.Option("--reason", help="free text kept in the round's correction trail")]
IdOption = Annotated[str, typer.Option("--id", help="the correction's id (idempotency key; default: derived "
                                       "from its content, so the same correction twice is applied once)")]
WaitOption = Annotated[bool, typer.Option("--wait", help=f"wait for the outcome (applied, no-op, duplicate, or "
                                          f"rejected with its reason: exit {EXIT_REJECTED})")]
TimeoutOption = Annotated[float, typer.Option("--wait-timeout", help=f"--wait: seconds to wait (exit {EXIT_TIMEOUT} "
                                              "if still not applied then)")]
JsonOption = Annotated[bool, typer.Option("--json", help="print the outcome as JSON")]


def void_command(ladder: Ladder,
                 round_id: Annotated[str, typer.Argument(help="the round to void")],
                 reason: ReasonOption = "", correction_id: IdOption = "", wait: WaitOption = False,
                 wait_timeout: TimeoutOption = WAIT_TIMEOUT_S, as_json: JsonOption = False) -> None:
    """Void a rated round: the service removes it from the ladder's history and re-rates from there."""
    message: dict[str, Any] = {"kind": VOID, "ladder": ladder, "round_id": round_id}
    _publish(message, reason, correction_id, wait, wait_timeout, as_json)


def amend_command(file: Annotated[Path, typer.Argument(exists=True, help="a JSON file: the amended RoundResult "
                                                        "(same round_id and ladder, new standings)")],
                  reason: ReasonOption = "", correction_id: IdOption = "", wait: WaitOption = False,
                  wait_timeout: TimeoutOption = WAIT_TIMEOUT_S, as_json: JsonOption = False) -> None:
    """Replace a rated round's standings: the service re-rates the ladder from that round on."""
    try:
        amended = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        fail(f"{file}: not a JSON file ({exc})", EXIT_INVALID)
    _publish({"kind": AMEND, "round": amended}, reason, correction_id, wait, wait_timeout, as_json)


def _publish(message: dict[str, Any], reason: str, correction_id: str, wait: bool, wait_timeout: float,
             as_json: bool) -> None:
    settings = Settings.from_env()
    if reason:
        message["reason"] = reason
    if correction_id:
        message["correction_id"] = correction_id
    try:
        correction = parse_correction(json.dumps(message), limits=Limits.from_settings(settings))
    except RoundRejected as exc:
        fail(f"invalid correction: {exc.reason}: {exc.message}" + (f" (field {exc.field})" if exc.field else ""),
             EXIT_INVALID)
    from stream.cli.reach import require

    require(settings, kafka=True, redis=wait, write=True)
    try:
        ensure_topic(settings, CORRECTIONS)
        with closing(RoundProducer(settings, CORRECTIONS)) as producer:
            producer.send(correction).get(timeout=60)
    except Exception as exc:  # noqa: BLE001 - any producer failure: say so, nothing else to do
        fail(f"could not publish the correction to {settings.topic(CORRECTIONS)}: {exc}", EXIT_PRODUCE_FAILED)
    outcome: dict[str, Any] = {"correction_id": correction.correction_id, "ladder": correction.ladder,
                               "round_id": correction.round_id, "outcome": "published"}
    if wait:
        outcome |= run_with_store(settings, lambda store: _wait(store, correction, wait_timeout))
    typer.echo(json.dumps(outcome) if as_json else " ".join(f"{k}={v}" for k, v in outcome.items()))
    if outcome["outcome"] == "rejected":
        raise typer.Exit(EXIT_REJECTED)
    if outcome["outcome"] == "pending":
        raise typer.Exit(EXIT_TIMEOUT)


async def _wait(store: Store, correction: Correction, timeout_s: float) -> dict[str, Any]:
    """The correction's outcome as the worker recorded it, once it is there (or ``pending``)."""
    deadline = time.monotonic() + timeout_s
    while True:
        entry, rejected = await ledger.outcome(store, correction.ladder, correction.correction_id)
        if entry is not None:
            if entry.get("content_hash") != correction.content_hash():
                return {"outcome": "rejected", "reason": CONFLICT,
                        "message": "the correction id was already used for another correction"}
            return {"outcome": entry.get("outcome", "applied")}
        if rejected is not None:
            return {"outcome": "rejected", **rejected}
        if time.monotonic() > deadline:
            return {"outcome": "pending"}
        await asyncio.sleep(POLL_S)
