"""``stream what-if LADDER FILE`` and ``stream explain LADDER PLAYER ROUND``: what a round would do
to its players' ratings (from Redis at REDIS_URL, writing nothing), and why a stored change is
what it is. The same answers as the read API's ``POST /api/ladders/{L}/what-if`` and
``GET /api/ladders/{L}/players/{P}/changes/{ROUND}/explain`` (``--json`` prints them as is).

Exit codes: 1 unknown ladder, player or round; 2 bad input (the round is not one the stream would
rate: its reason is printed); 4 Redis unreachable.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from stream.cli.output import Ladder, num, table
from stream.cli.store_command import EXIT_BAD_INPUT, EXIT_NOT_FOUND, fail, run_on_redis
from stream.contracts.round import Limits
from stream.pipeline import explain, whatif
from stream.pipeline.context import load_ladders
from stream.settings import Settings
from stream.store import queries
from stream.store.client import AsyncRedis


def register(app: typer.Typer) -> None:
    """Add ``what-if`` and ``explain`` to the ``stream`` app."""
    app.command("what-if")(what_if_command)
    app.command("explain")(explain_command)


def what_if_command(
    ladder: Ladder,
    file: Annotated[str, typer.Argument(help="a RoundResult-shaped JSON file (its standings; - for stdin)")],
    explain: Annotated[list[str] | None, typer.Option("--explain", "-e",
                                                      help="a player whose tier targets to print (repeatable)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the API's JSON answer")] = False,
) -> None:
    """What a round would do to its players' ratings, rated from the live state exactly as the
    stream would rate it; nothing is written."""
    settings = Settings.from_env()
    cfg = load_ladders(settings).of(ladder)
    try:
        raw = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
    except OSError as exc:
        fail(f"cannot read {file}: {exc.strerror}", EXIT_BAD_INPUT)
    if explain:
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            fail(f"{file} is not JSON", EXIT_BAD_INPUT)
        if isinstance(data, dict):
            data["explain_for"] = list(dict.fromkeys([*(data.get("explain_for") or []), *explain]))
            raw = json.dumps(data).encode()

    async def work(r: AsyncRedis) -> dict[str, Any] | None:
        if not await queries.ladder_exists(r, ladder):
            return None
        return await whatif.ask(r, cfg, ladder, raw, Limits.from_settings(settings), time.time())

    try:
        answer = run_on_redis(settings, work)
    except whatif.WhatIfRefused as refused:
        fail(f"{refused.code}: {refused.message}", EXIT_BAD_INPUT)
    if answer is None:
        fail(f"unknown ladder {ladder!r}", EXIT_NOT_FOUND)
    if as_json:
        typer.echo(json.dumps(answer, indent=2, ensure_ascii=False))
        return
    typer.echo(f"what-if on {ladder} ({answer['model']}): {answer['field_size']} players, weight "
               f"{answer['weight']:g}; nothing written")
    rows = [[str(c["rank"]), c["player"] + ("" if c["known"] else " (new)"), num(c["performance"]),
             num(c["mu_before"]), num(c["mu_after"]), f"{c['delta']:+.1f}", num(c["sigma_after"]),
             num(c["display_rating"]), f"{c['tier_before'] or '-'} -> {c['tier'] or '-'}"]
            for c in answer["changes"]]
    typer.echo(table(["rank", "player", "perf", "mu before", "mu after", "change", "sigma", "rating", "tier"], rows))
    for t in answer["targets"]:
        typer.echo(target_line(t))


def target_line(t: dict[str, Any]) -> str:
    """One tier target in words."""
    if not t["available"]:
        return f"{t['player']}: {t['reason']}"
    parts = []
    if t["next_tier"] is not None:
        parts.append(f"reaches {t['next_tier']} at rank {_rank(t['rank_for_next'], t['tied_for_next'])}"
                     if t["rank_for_next"] is not None else f"cannot reach {t['next_tier']} in this round")
    if t["tier"]:
        parts.append(f"keeps {t['tier']} down to rank {_rank(t['rank_to_keep'], t['tied_to_keep'])}"
                     if t["rank_to_keep"] is not None else f"drops out of {t['tier']} whatever his rank")
    return f"{t['player']}: " + ("; ".join(parts) or "no tier to reach")


def _rank(rank: int, tied: bool) -> str:
    return f"{rank} (tied)" if tied else str(rank)


def explain_command(
    ladder: Ladder,
    player: Annotated[str, typer.Argument(help="player id")],
    round_id: Annotated[str, typer.Argument(help="round id")],
    as_json: Annotated[bool, typer.Option("--json", help="print the API's JSON answer")] = False,
) -> None:
    """Why a player's rating changed as it did in a round: expected against actual rank,
    performance, weight, drift, sigma, the display rule and the tier's reason, from what is stored."""
    settings = Settings.from_env()
    cfg = load_ladders(settings).of(ladder)
    try:
        answer = run_on_redis(settings, lambda r: explain.explain_change(r, cfg, ladder, player, round_id))
    except explain.ExplainRefused as refused:
        fail(refused.message, EXIT_NOT_FOUND)
    if as_json:
        typer.echo(json.dumps(answer, indent=2, ensure_ascii=False))
        return
    c = answer["change"]
    typer.echo(f"{player} in round {round_id} ({ladder}, {answer['model']}): rank {c.get('rank')} of "
               f"{c.get('field_size')}, mu {c['mu_before']:.1f} -> {c['mu_after']:.1f}, sigma {c['sigma_before']:.1f} "
               f"-> {c['sigma_after']:.1f}")
    for line in answer["text"]:
        typer.echo(f"  {line}")
