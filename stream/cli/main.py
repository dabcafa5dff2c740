"""The ``stream`` command: one typer app; each command lives in its own module under stream/cli.

Command modules register themselves below with one line each (``register(app)``), so adding a
command touches this file by one import and one call.
"""

from __future__ import annotations

import typer

from stream.settings import StackChoiceError

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

#: Exit code of a configuration that does not say which Kafka / Redis to use.
EXIT_CONFIG = 2

app = typer.Typer(
    name="stream",
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


def main() -> None:
    """Console entry point (``stream`` in pyproject.toml, ``python -m stream``)."""
    try:
        app()
    except StackChoiceError as exc:  # several `stream stack`s run and nothing says which: a clear line
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_CONFIG) from None
