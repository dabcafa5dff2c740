"""``stream season start`` / ``list`` (a ladder's season schedule), ``shares`` (league thresholds
from target shares, recomputed from the live leaderboard) and ``archive`` (a season's final
standings, read back with ``stream leaderboard L --season S``).

A season start is kept twice: in the ladder's schedule of record in Redis (``stream season
start`` adds it, refused when the ladder has already registered a round at or after the start:
``stream.store.seasons.schedule_season``), which the running workers read every SEASON_REFRESH_S
and merge with the ``LADDERS`` entry's schedule (``stream.pipeline.season_schedules``), and in the
``LADDERS`` configuration (the ``--ladders`` file rewritten atomically, or the new JSON printed),
which ``stream replay --ladders`` reads. The season of a round is a pure function of its time and
the schedule, so the stream, replay, backfill and corrections reproduce every boundary exactly. A
start is at least SEASON_NOTICE_S ahead, a sanity rule (``--backdate`` lifts it; the Redis check
stays, and a worker that has not read the schedule yet is refused a round of the season:
``register_round.lua``'s ``stale_schedule``);
``--config-only`` edits the configuration alone (a history to replay or backfill). The season's
soft reset pulls mu toward ``--centre``, or with ``--centre-from-ladder`` toward the ladder's mean
mu when the season is scheduled, frozen in the schedule (so replay sees the same).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import typer

from stream.engine.ladders import LADDER_NAME, LaddersError, parse_ladders
from stream.engine.season_schedule import Seasons, iso_time, parse_time, season_of, with_started
from stream.cli.store_command import bad_input, json_option, run_on_redis
from stream.settings import Settings
from stream.cli.output import AsJson, Ladder

T = TypeVar("T")


def _season() -> None:
    """A ladder's seasons: schedule a season start (soft reset at each player's next round), list them."""


def register(app: typer.Typer) -> None:
    """Add ``stream season`` (start, list) to the CLI app."""
    group = typer.Typer(no_args_is_help=True, rich_markup_mode=None, add_completion=False)
    group.callback()(_season)
    group.command("start")(start_command)
    group.command("list")(list_command)
    group.command("shares")(shares_command)
    group.command("archive")(archive_command)
    app.add_typer(group, name="season")


LaddersOption = Annotated[str | None, typer.Option(
    "--ladders", help="the LADDERS configuration: a file holding it (rewritten in place by `start`) or JSON text "
                      "(default: the LADDERS setting)")]


def start_command(
    ladder: Ladder,
    at: Annotated[str | None, typer.Option("--at", help="start time, ISO 8601 with its zone or epoch seconds "
                                                        "(default: now + SEASON_NOTICE_S)")] = None,
    name: Annotated[str | None, typer.Option("--name", help="the season's name (default: S<number>)")] = None,
    ladders: LaddersOption = None,
    backdate: Annotated[bool, typer.Option("--backdate", help="allow a start less than SEASON_NOTICE_S ahead, or "
                                                               "past (still after every round the ladder has "
                                                               "registered)")] = False,
    config_only: Annotated[bool, typer.Option("--config-only", help="only the LADDERS configuration (a history to "
                                                                    "replay or backfill), not Redis")] = False,
    centre: Annotated[float | None, typer.Option("--centre", help="the mu this season's soft reset pulls toward "
                                                                  "(default: the ladder's configured centre)")] = None,
    centre_from_ladder: Annotated[bool, typer.Option("--centre-from-ladder", help="the ladder's mean mu now, read from "
                                                                               "Redis (REDIS_URL) and frozen in the "
                                                                               "schedule")] = False,
) -> None:
    """Start a season on a ladder: its players are soft-reset at their first round from then on.
    The running workers take it up within SEASON_REFRESH_S (the schedule of record in Redis)."""
    if not LADDER_NAME.match(ladder):
        bad_input(f"not a ladder name: {ladder!r}")
    settings = Settings.from_env(connect=False)
    notice = max(settings.season_notice_s, 2 * settings.season_refresh_s)
    path, raw = _load(ladders)
    now = time.time()
    try:
        start = now + notice if at is None else parse_time(_number(at), "--at")
    except ValueError as exc:
        bad_input(str(exc))
    if start < now + notice and not backdate and not config_only:
        bad_input(f"--at {at} is before now + the notice of {notice:g} s (SEASON_NOTICE_S, at least twice "
              "SEASON_REFRESH_S): a worker may rate a round of the season before it has read the schedule "
              "(--backdate for a start after every round the ladder has; --config-only for a history to replay)")
    entry = raw.setdefault(ladder, {})
    if not isinstance(entry, dict):
        bad_input(f"LADDERS[{ladder!r}]: must be an object")
    try:
        current = Seasons.from_dict(entry.get("seasons", {}))
    except ValueError as exc:
        bad_input(f"LADDERS[{ladder!r}].seasons: {exc}")
    if not config_only:
        current = _with_redis(ladder, current)
    label = name or f"S{len(current.names) + 1}"
    if current.starts and start <= current.starts[-1]:
        bad_input(f"a season must start after the last one ({current.names[-1]} at {iso_time(current.starts[-1])})")
    if label in current.names:
        bad_input(f"ladder {ladder!r} already has a season named {label!r}")
    if centre is not None and centre_from_ladder:
        bad_input("give --centre or --centre-from-ladder, not both")
    if centre_from_ladder:
        centre = _ladder_mean(ladder)
    seasons = dict(entry.get("seasons", {}))
    season = {"name": label, "start": iso_time(start), **({} if centre is None else {"centre": centre})}
    seasons["schedule"] = [*seasons.get("schedule", []), season]
    entry["seasons"] = seasons
    text = json.dumps(raw, indent=2, sort_keys=True) + "\n"
    try:
        parse_ladders(text)
    except LaddersError as exc:
        bad_input(str(exc))
    if not config_only:
        _schedule(ladder, label, start, centre)
    where = "" if config_only else "; running workers take it up within SEASON_REFRESH_S"
    if path is None:
        typer.echo(text, nl=False)
        typer.echo(f"season {label} of {ladder} starts at {iso_time(start)}{where} (the LADDERS above holds it too, "
                   "for `stream replay --ladders`)", err=True)
        return
    _write(path, text)
    typer.echo(f"season {label} of {ladder} starts at {iso_time(start)} ({path} updated{where})")


def _number(text: str) -> str | float:
    """``--at`` as epoch seconds when it is a number, else the text (an ISO 8601 time)."""
    try:
        return float(text)
    except ValueError:
        return text


def _with_redis(ladder: str, seasons: Seasons) -> Seasons:
    """``seasons`` with the ladder's seasons of record in Redis (REDIS_URL): the schedule the
    workers rate by."""
    from stream.store.seasons import scheduled_seasons

    held = run_on_redis(Settings.from_env(), scheduled_seasons)
    try:
        return with_started(seasons, held.get(ladder, []))
    except ValueError as exc:
        bad_input(f"the seasons of {ladder!r} in Redis do not merge with LADDERS: {exc}")


def _schedule(ladder: str, name: str, start: float, centre: float | None) -> None:
    """Add the season to the ladder's schedule of record in Redis; exit 2 if a round at or after
    its start is already registered (replay would differ) or Redis's schedule refuses it."""
    from stream.store.seasons import SCHEDULED, schedule_season

    outcome, detail = run_on_redis(Settings.from_env(), lambda r: schedule_season(r, ladder, name, start, centre),
                                   write=True)
    if outcome == SCHEDULED:
        return
    if outcome == "late":
        bad_input(f"ladder {ladder!r} has already registered a round at {iso_time(float(detail))}, at or after the start "
              f"{iso_time(start)}: it was rated without the season (start the season later)")
    if outcome == "order":
        bad_input(f"a season must start after the last one (at {iso_time(float(detail))} in Redis)")
    bad_input(f"ladder {ladder!r} already has a season named {name!r} (in Redis)")


def list_command(
    ladder: Ladder,
    ladders: LaddersOption = None,
    as_json: AsJson = False,
    config_only: Annotated[bool, typer.Option("--config-only", help="the LADDERS configuration's schedule only, "
                                                                    "without the seasons started in Redis")] = False,
) -> None:
    """A ladder's season schedule (LADDERS with the seasons started in Redis) and the season now."""
    _, raw = _load(ladders)
    try:
        params = parse_ladders(json.dumps(raw)).of(ladder).params
    except LaddersError as exc:
        bad_input(str(exc))
    seasons = getattr(params, "season", None) or Seasons()
    if not config_only:
        seasons = _with_redis(ladder, seasons)
    current = seasons.name_of(int(season_of(time.time(), seasons)))
    doc = {"ladder": ladder, "current": current or None, **seasons.to_dict()}
    if as_json:
        typer.echo(json.dumps(doc))
        return
    for entry in doc["schedule"]:
        typer.echo(f"{entry['name']}\t{entry['start']}{'  (current)' if entry['name'] == current else ''}")
    if not doc["schedule"]:
        typer.echo(f"ladder {ladder!r} has no seasons")


def shares_command(
    ladder: Ladder,
    as_json: AsJson = False,
) -> None:
    """Recompute a ladder's league thresholds from its target shares and the live leaderboard, and
    keep them from now on."""
    from stream.pipeline.seasons import recompute_shares

    doc = _on_ladder(ladder, lambda r, cfg: recompute_shares(r, ladder, cfg, cfg.display, now=time.time()))
    if as_json:
        typer.echo(json.dumps(doc))
        return
    for league, low, count in zip(doc["leagues"], doc["thresholds"], doc["counts"]):
        typer.echo(f"{league}\t{'-' if low is None else f'{low:.1f}'}\t{count}")
    typer.echo(f"({doc['players']} players; in effect from {iso_time(doc['at'])})")


def archive_command(
    ladder: Ladder,
    season: Annotated[str, typer.Argument(help="season name")],
    as_json: AsJson = False,
) -> None:
    """Archive a season's final standings (rating, league, division, rank) of every player who played in it."""
    from stream.pipeline.seasons import archive_season

    done = _on_ladder(ladder, lambda r, cfg: archive_season(r, ladder, season, cfg, cfg.display))
    summary = {"ladder": ladder, "season": season, "players": done.players, "missing": done.missing}
    typer.echo(json.dumps(summary) if as_json else
               f"season {season} of {ladder}: {done.players} players archived"
               + (f"; {done.missing} whose history no longer reaches it" if done.missing else ""))


def _on_ladder(ladder: str, work: Callable[[Any, Any], Awaitable[T]]) -> T:
    """``work(redis, the ladder's LadderConfig)`` on REDIS_URL with LADDERS of the environment; a
    ladder without the season configuration it needs is exit 2 (``SeasonsError``)."""
    from stream.pipeline.context import load_ladders
    from stream.pipeline.seasons import SeasonsError

    settings = Settings.from_env()
    config = load_ladders(settings).of(ladder)
    try:
        return run_on_redis(settings, lambda r: work(r, config), write=True)
    except SeasonsError as exc:
        bad_input(str(exc))


def _ladder_mean(ladder: str) -> float:
    """The ladder's mean mu now (REDIS_URL); exit 2 if it has no players."""
    from stream.store.seasons import mean_mu

    found = run_on_redis(Settings.from_env(), lambda r: mean_mu(r, ladder))
    if found is None:
        bad_input(f"ladder {ladder!r} has no players to take a mean of")
    return found


def _load(option: str | None) -> tuple[Path | None, dict[str, Any]]:
    """The LADDERS configuration as a JSON object, and the file it came from (None: text)."""
    text, path = (Settings.from_env(connect=False).ladders, None) if option is None else json_option(option, "--ladders")
    try:
        raw = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        bad_input(f"LADDERS: not JSON ({exc})")
    if not isinstance(raw, dict):
        bad_input("LADDERS: must be a JSON object mapping ladder -> entry")
    return path, raw


def _write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically (a temporary file renamed over it)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
