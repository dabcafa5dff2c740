"""The ``stream`` command: one typer app; each command lives in its own module under stream/cli.

Command modules register themselves below with one line each (``register(app)``), so adding a
command touches this file by one import and one call.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

from stream.engine.ladders import LaddersError
from stream.settings import SettingsError

from stream.cli import replay as replay_cmd
from stream.cli import evaluate as evaluate_cmd
from stream.cli import tune as tune_cmd
from stream.cli import publish as publish_cmd
from stream.cli import stack as stack_cmd
from stream.cli import tail as tail_cmd
from stream.cli import worker as worker_cmd
from stream.cli import query as query_cmd
from stream.cli import serve as serve_cmd
from stream.cli import rejected as rejected_cmd
from stream.cli import backfill as backfill_cmd
from stream.cli import snapshot as snapshot_cmd
from stream.cli import erase as erase_cmd
from stream.cli import correct as correct_cmd
from stream.cli import whatif as whatif_cmd

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


class Commands(TyperGroup):
    """The command group: the one place that turns an invalid configuration into ``error: ...``
    lines and exit code 2 for every command (a bad setting from ``Settings.from_env``, a bad
    ``LADDERS``, several running stacks), never a traceback."""

    def invoke(self, ctx: Any) -> Any:  # Any: click's Context, which typer >= 0.2x vendors as its own class
        try:
            return super().invoke(ctx)
        except (SettingsError, LaddersError) as exc:
            problems = exc.problems if isinstance(exc, SettingsError) else (str(exc),)
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
)



@app.callback()
def _root() -> None:
    """Streaming Elo-MMR rating service: replay, generate data, run the stack."""


replay_cmd.register(app)
evaluate_cmd.register(app)
tune_cmd.register(app)
publish_cmd.register(app)
stack_cmd.register(app)
tail_cmd.register(app)
worker_cmd.register(app)
query_cmd.register(app)
serve_cmd.register(app)
rejected_cmd.register(app)
backfill_cmd.register(app)
snapshot_cmd.register(app)
erase_cmd.register(app)
correct_cmd.register(app)
whatif_cmd.register(app)


def main() -> None:
    """Console entry point (``stream`` in pyproject.toml, ``python -m stream``)."""
    app()
