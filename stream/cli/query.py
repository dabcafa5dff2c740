"""Read commands: ``stream leaderboard``, ``stream player``, ``stream round`` (Redis at REDIS_URL).

Human-readable tables by default, ``--json`` for the same documents the read API returns.
Unknown ladder, player or round: a message on stderr and exit code :data:`EXIT_NOT_FOUND`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import typer

from stream.cli.output import AsJson, Ladder, num, table, when
from stream.cli.store_command import EXIT_NOT_FOUND, run_on_redis
from stream.pipeline.context import load_ladders
from stream.pipeline.status import status_fields
from stream.settings import Settings
from stream.store import queries
from stream.store.client import AsyncRedis

DEFAULT_TOP = 20
RECENT_HISTORY = 10

T = TypeVar("T")


def register(app: typer.Typer) -> None:
    """Add the read commands to the ``stream`` app."""
    app.command("leaderboard")(leaderboard_command)
    app.command("player")(player_command)
    app.command("round")(round_command)


def _run(query: Callable[[AsyncRedis], Awaitable[T]]) -> T:
    return run_on_redis(Settings.from_env(), query)


async def _missing(r: AsyncRedis, ladder: str, otherwise: str = "", *, player: str | None = None) -> str:
    """Why nothing was found: an unknown ladder (listing the known ones), else an unknown player (with
    the ids that look like his), else ``otherwise``."""
    known = await queries.ladders(r)
    if ladder not in known:
        return queries.unknown_ladder_message(ladder, known)
    if player is not None:
        return queries.unknown_player_message(ladder, player, await queries.similar_players(r, ladder, player))
    return otherwise


def _fail(message: str) -> typer.Exit:
    typer.echo(message, err=True)
    return typer.Exit(EXIT_NOT_FOUND)


def _status(ratings: list[tuple[float | None, float | None, int | None, float | None]], ladder: str) -> list[dict[str, Any]]:
    """Each (mu, sigma, rounds, last_time)'s interval, provisional status and eligibility now
    (``stream.pipeline.status``, the ladder's display entry), as the API shows them."""
    cfg = load_ladders(Settings.from_env()).of(ladder)
    return status_fields(cfg, [r[0] for r in ratings], [r[1] for r in ratings], [r[2] for r in ratings],
                         [r[3] for r in ratings], time.time())


def leaderboard_command(
    ladder: Ladder,
    top: Annotated[int, typer.Option("--top", "-n", min=1, max=10_000, help="number of players")] = DEFAULT_TOP,
    as_json: AsJson = False,
    season: Annotated[str | None, typer.Option("--season", help="a past season's archived final standings "
                                                                "(`stream season archive`)")] = None,
) -> None:
    """The best players of a ladder by display rating."""
    if season is not None:
        _season_leaderboard(ladder, season, top, as_json)
        return

    async def query(r: AsyncRedis) -> queries.LeaderboardPage | None:
        if not await queries.ladder_exists(r, ladder):
            return None
        return await queries.leaderboard(r, ladder, offset=0, limit=top)

    page = _run(query)
    if page is None:
        raise _fail(_run(lambda r: _missing(r, ladder)))
    if as_json:
        typer.echo(json.dumps(page.to_dict(), indent=2))
        return
    marks = _status([(row.mu, row.sigma, row.rounds, row.last_time) for row in page.rows], ladder)
    rows = [[str(row.position), row.player, num(row.display_rating) + ("?" if m["provisional"] else ""), num(row.mu),
             num(row.sigma), row.tier or "-", str(row.rounds or 0),
             "-" if m["interval"] is None else f"{num(m['interval'][0])}..{num(m['interval'][1])}",
             "" if m["eligible"] is not False else "ineligible"]
            for row, m in zip(page.rows, marks)]
    typer.echo(table(["#", "player", "rating", "mu", "sigma", "tier", "rounds", "interval", ""], rows))
    typer.echo(f"({len(page.rows)} of {page.total} players)")


def _season_leaderboard(ladder: str, season: str, top: int, as_json: bool) -> None:
    """``leaderboard --season``: the archived final standings, best first."""
    from stream.store import seasons

    total, rows = _run(lambda r: seasons.archive_page(r, ladder, season, offset=0, limit=top))
    if not total:
        raise _fail(f"no archive of season {season!r} on ladder {ladder!r} (`stream season archive {ladder} {season}`)")
    if as_json:
        typer.echo(json.dumps({"ladder": ladder, "season": season, "total": total, "rows": rows}, indent=2))
        return
    cells = [[str(row["rank"]), row["player"], num(row["display_rating"]), num(row["mu"]), num(row["sigma"]),
              row["league"] or "-", "-" if row["division"] is None else str(row["division"])] for row in rows]
    typer.echo(table(["#", "player", "rating", "mu", "sigma", "league", "division"], cells))
    typer.echo(f"({len(rows)} of {total} players; season {season})")


def player_command(
    ladder: Ladder,
    player: Annotated[str, typer.Argument(help="player id")],
    as_json: AsJson = False,
) -> None:
    """A player's current rating, tier, position and recent history."""
    view = _run(lambda r: queries.player(r, ladder, player, history_limit=RECENT_HISTORY))
    if view is None:
        raise _fail(_run(lambda r: _missing(r, ladder, player=player)))
    if as_json:
        typer.echo(json.dumps(view.to_dict(), indent=2))
        return
    position = f"{view.position} of {view.leaderboard_size}" if view.position else "-"
    (m,) = _status([(view.mu, view.sigma, view.rounds, view.last_time)], ladder)
    typer.echo(f"{view.player} ({view.ladder}): rating {num(view.display_rating)}{'? (provisional)' if m['provisional'] else ''}  "
               f"mu {num(view.mu)}  sigma {num(view.sigma)} (now {num(m['sigma_now'])})  "
               f"interval [{num(m['interval'][0])}, {num(m['interval'][1])}]  tier {view.tier or '-'}  "
               f"position {position}  rounds {view.rounds}"
               + ("" if m["eligible"] is not False else f"  not eligible: {', '.join(m['ineligible_reasons'])}"))
    rows = [[h["round_id"], when(h.get("occurred_at")), f"{h['rank']}/{h['field_size']}", num(h["performance"]),
             num(h["mu_before"]), num(h["mu_after"]), f"{h['mu_after'] - h['mu_before']:+.1f}"]
            for h in reversed(view.history)]
    if rows:
        typer.echo(table(["round", "when", "rank", "perf", "mu before", "mu after", "change"], rows))


def round_command(
    ladder: Ladder,
    round_id: Annotated[str, typer.Argument(help="round id")],
    as_json: AsJson = False,
) -> None:
    """A round's status and every player's rating change."""
    view = _run(lambda r: queries.round_view(r, ladder, round_id))
    if view is None:
        raise _fail(_run(lambda r: _missing(r, ladder, f"unknown round {round_id!r} in ladder {ladder!r}")))
    if as_json:
        typer.echo(json.dumps(view.to_dict(), indent=2))
        return
    rec = view.record
    typer.echo(f"round {view.round_id} ({view.ladder}): {rec['status']}, {rec['field_size']} players, "
               f"occurred {when(rec['occurred_at'])}, rated {when(rec['rated_at'])}")
    for step in rec.get("corrections") or []:  # the correction trail: what changed the round, when, why
        typer.echo(f"  {step.get('kind')} {when(step.get('at'))} by correction {step.get('id')}"
                   + (f": {step['reason']}" if step.get("reason") else ""))
    rows = [[str(c["rank"]), c["player"], num(c["performance"]), num(c["mu_before"]), num(c["mu_after"]),
             f"{c['mu_after'] - c['mu_before']:+.1f}", num(c.get("display_rating"))] for c in view.results]
    typer.echo(table(["rank", "player", "perf", "mu before", "mu after", "change", "rating"], rows))
    if not view.complete:
        typer.echo(f"(first {len(view.results)} results only)")
