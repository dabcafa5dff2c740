"""``stream replay`` and ``stream generate-synthetic``: batch commands (no Kafka, no Redis)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands to the CLI app."""
    app.command("replay")(replay)


def replay() -> None:
    """Replay rounds through the engine (placeholder until stream.batch lands)."""
    raise typer.Exit(1)
