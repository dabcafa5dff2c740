"""The ``stream`` command: one typer app; each command lives in its own module under stream/cli.

Command modules register themselves below with one line each (``register(app)``), so adding a
command touches this file by one import and one call.
"""

from __future__ import annotations

import typer

from stream.cli import replay as replay_cmd
from stream.cli import publish as publish_cmd
from stream.cli import stack as stack_cmd
from stream.cli import tail as tail_cmd
from stream.cli import worker as worker_cmd
from stream.cli import query as query_cmd
from stream.cli import serve as serve_cmd
from stream.cli import backfill as backfill_cmd
from stream.cli import snapshot as snapshot_cmd
from stream.cli import erase as erase_cmd

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
publish_cmd.register(app)
stack_cmd.register(app)
tail_cmd.register(app)
worker_cmd.register(app)
query_cmd.register(app)
serve_cmd.register(app)
backfill_cmd.register(app)
snapshot_cmd.register(app)
erase_cmd.register(app)


def main() -> None:
    """Console entry point (``stream`` in pyproject.toml, ``python -m stream``)."""
    app()
