"""``stream tail``: follow the ``rating-changes`` topic, optionally filtered, as table lines or JSON (exit 1
if ``--timeout`` ends the wait before ``--max-events``). On the embedded Tansu broker "the end" is the last
stored batch's start (stream/stack/README.md): a few earlier events may show.
"""

from __future__ import annotations

import json
import time
from typing import Any

import typer

from stream.cli.follow import follow_records, print_lines
from stream.pipeline.topics import RATING_CHANGES
from stream.settings import Settings

#: Exit code when --timeout ends the wait before --max-events events arrived.
EXIT_TIMEOUT = 1


def format_change(change: dict[str, Any]) -> str:
    """One human-readable line of a change; with ``weight`` (v4) also the team ("-": none) and share played;
    a provisional rating (v5) marked as the leaderboard marks it: ``1500.0?``."""
    delta = change["mu_after"] - change["mu_before"]
    tier = change.get("tier") or "-"
    line = (f"{change['ladder']:<12} {change['round_id']:<16} {change['player']:<20} "
            f"#{change['rank']}/{change['field_size']:<5} mu {change['mu_before']:8.1f} -> {change['mu_after']:8.1f} "
            f"({delta:+7.1f})  sigma {change['sigma_after']:6.1f}  rating {change['display_rating']:8.1f}"
            f"{'?' if change.get('provisional') else ''}  {tier}")
    if change.get("weight") is None:  # a plain round's change (v1-v3 fields only)
        return line
    return f"{line}  team {change.get('team') or '-'}  weight {change['weight']:g}"


def tail(
    ladder: list[str] = typer.Option([], "--ladder", help="only these ladders (repeatable)"),
    player: list[str] = typer.Option([], "--player", help="only these players (repeatable)"),
    from_beginning: bool = typer.Option(False, "--from-beginning", help="start at the oldest stored change"),
    json_output: bool = typer.Option(False, "--json", help="one RatingChange JSON object per line"),
    max_events: int = typer.Option(0, "--max-events", help="exit after this many events (0: never)"),
    timeout: float = typer.Option(0.0, "--timeout", help="exit after this many seconds (0: never)"),
) -> None:
    """Follow rating changes as they are published."""
    settings = Settings.from_env()
    from stream.cli.reach import require

    require(settings, kafka=True)
    deadline = time.monotonic() + timeout if timeout > 0 else None
    changes = (change for _, _, change in follow_records(settings, [RATING_CHANGES], from_beginning=from_beginning,
                                                         deadline=deadline)
               if (not ladder or change.get("ladder") in ladder) and (not player or change.get("player") in player))
    print_lines(settings, (json.dumps(change, separators=(",", ":")) if json_output else format_change(change)
                           for change in changes), max_events=max_events, timeout_exit=EXIT_TIMEOUT)


def register(app: typer.Typer) -> None:
    """Add ``stream tail`` to the CLI."""
    app.command("tail")(tail)
