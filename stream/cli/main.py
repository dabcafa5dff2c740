"""The ``stream`` command: one typer app; each command lives in its own module under stream/cli.

Command modules are imported lazily (:data:`COMMANDS`: module and one-line help), so ``stream --help``
and a command's start import only what it needs (bench/cli_start.py); a module adds its commands with
``register(app)``.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from stream.settings import SettingsError

#: Every command, in ``--help`` order: name -> (its module under stream/cli, its one-line help).
#: tests/test_cli_lazy.py checks each help line against the command's own docstring.
COMMANDS: dict[str, tuple[str, str]] = {
    "replay": ("replay", "Replay rounds through the engine in process and write every player's final rating."),
    "generate-synthetic": ("replay", "Write synthetic rounds: the paper's §6.1 dataset (default), a contest history "
                                     "or matches."),
    "evaluate": ("evaluate", "Replay each model with its defaults and print pair inversion (share of correctly "
                             "ordered pairs, higher is better), rank deviation (lower is better) for all players "
                             "already rated and for those with >= 5 earlier rounds (first 10 % of rounds not "
                             "scored), and rounds/s."),
    "tune": ("tune", "Random search of the model's parameters on the first part of the history (objective: pair "
                     "inversion of players with >= 5 earlier rounds), then the best and the defaults rated through "
                     "every round and scored on the held-out last part only."),
    "publish": ("publish", "Validate every round of FILE, then publish them to the `rounds` topic (keyed by ladder)."),
    "stack": ("stack", "Run a private Kafka-protocol broker and redis-server (and with --demo a worker + demo "
                       "stream)."),
    "tail": ("tail", "Follow rating changes as they are published."),
    "worker": ("worker", "Run a pipeline worker: rate the rounds on Kafka into Redis and emit rating changes."),
    "leaderboard": ("query", "The best players of a ladder by display rating."),
    "player": ("query", "A player's current rating, tier, position and recent history."),
    "round": ("query", "A round's status and every player's rating change."),
    "api": ("serve", "Serve the read API and the dashboard over Redis (REDIS_URL)."),
    "rejected": ("rejected", "The rounds the service rejected (the dead-letter topic), newest first."),
    "backfill": ("backfill", "Rate a history of rounds in process and write it into Redis as the stream would "
                             "(no Kafka)."),
    "export": ("snapshot", "Write a ladder's whole stored state to a file (restore it with `stream import`)."),
    "import": ("snapshot", "Restore a ladder from a snapshot into a Redis that has no state for that ladder."),
    "erase": ("erase", "Delete a player's state, history and leaderboard entry; pseudonymise his id in stored "
                       "rounds."),
    "void": ("correct", "Void a rated round: the service removes it from the ladder's history and re-rates from "
                        "there."),
    "amend": ("correct", "Replace a rated round's standings: the service re-rates the ladder from that round on."),
    "simulate": ("simulate", "Simulate players with hidden true skills queueing for duels: the matchmaker, a fixed "
                             "rating window, the matchmaker over openskill ratings, random pairing and the ideal "
                             "pairing; print fairness (true win probability within 35-65 %) by games played, pair "
                             "accuracy, waits and calibration."),
    "queue": ("queue", "Matchmaking: join and cancel tickets, a queue's state, its matches as they form."),
    "what-if": ("whatif", "What a round would do to its players' ratings, rated from the live state exactly as the "
                          "stream would rate it; nothing is written."),
    "season": ("season", "A ladder's seasons: schedule a season start (soft reset at each player's next round), list "
                         "them."),
    "explain": ("whatif", "Why a player's rating changed as it did in a round: expected against actual rank, "
                          "performance, weight, drift, sigma, the display rule and the tier's reason, from what is "
                          "stored."),
}


def _hide_flag_types() -> None:
    """``--help`` without ``<bool>`` after each flag: typer (0.2x) shows every option's type, and a
    flag takes no value, so for a flag it shows nothing (a flag's help says what it switches)."""
    from typer.core import TyperOption

    shown = TyperOption.display_type_rich
    if getattr(shown, "_ems_flags_hidden", False):
        return

    def display_type_rich(self: TyperOption, ctx: typer.Context) -> str | None:
        return None if self.is_flag else shown(self, ctx)

    setattr(display_type_rich, "_ems_flags_hidden", True)
    setattr(TyperOption, "display_type_rich", display_type_rich)


_hide_flag_types()

#: Exit code of an invalid configuration: a bad setting, LADDERS, or no clear Kafka / Redis to use.
EXIT_CONFIG = 2


def load_command(name: str) -> Any:
    """The click command ``name`` of :data:`COMMANDS`, its module imported now (click's Command)."""
    module = importlib.import_module(f"stream.cli.{COMMANDS[name][0]}")
    holder = typer.Typer(add_completion=False, rich_markup_mode=None)
    module.register(holder)
    built = typer.main.get_command(holder)
    return built.commands[name] if isinstance(built, TyperGroup) else built


class Commands(TyperGroup):
    """The command group: lists :data:`COMMANDS` without importing them, imports the one that runs, and
    turns an invalid configuration (settings, ``LADDERS``, several stacks) into ``error:`` lines, exit 2."""

    def list_commands(self, ctx: Any) -> list[str]:
        return [*COMMANDS, *(name for name in self.commands if name not in COMMANDS)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """A registered command, or for --help a stand-in with the name and help of a lazy one."""
        if cmd_name in self.commands or cmd_name not in COMMANDS:
            return self.commands.get(cmd_name)
        return TyperCommand(cmd_name, help=COMMANDS[cmd_name][1], short_help=COMMANDS[cmd_name][1])

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Any, list[str]]:
        if args and args[0] in COMMANDS and args[0] not in self.commands:
            return args[0], load_command(args[0]), args[1:]
        if args and args[0] not in self.commands:  # unknown: typer's "did you mean" looks at .commands
            self.commands = {**{n: self.get_command(ctx, n) for n in COMMANDS}, **self.commands}
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: Any) -> Any:  # Any: click's Context, which typer >= 0.2x vendors as its own class
        try:
            return super().invoke(ctx)
        except Exception as exc:
            ladders = sys.modules.get("stream.engine.ladders")  # loaded if it raised: no import up front
            if isinstance(exc, SettingsError):
                problems: tuple[str, ...] = exc.problems
            elif ladders is not None and isinstance(exc, ladders.LaddersError):
                problems = (str(exc),)
            else:
                raise
            for problem in problems:
                typer.echo(f"error: configuration: {problem}", err=True)
            raise typer.Exit(EXIT_CONFIG) from None


app = typer.Typer(
    name="stream",
    cls=Commands,
    help="Streaming Elo-MMR rating service: replay, generate data, run the stack.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,  # a traceback must never print Settings (passwords): docs/security.md
    rich_markup_mode=None,  # plain click help: rich costs ~0.5 s of imports on every start (bench/cli_start.py)
)


@app.callback()
def _root() -> None:
    """Streaming Elo-MMR rating service: replay, generate data, run the stack."""


def main() -> None:
    """Console entry point (``stream`` in pyproject.toml, ``python -m stream``)."""
    app()
