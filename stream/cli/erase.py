"""``stream erase LADDER PLAYER``: remove a player's data from a ladder (stream.store.erase)."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from typing import Annotated

import typer

from stream.cli.store_command import EXIT_BAD_INPUT, fail, run_with_store
from stream.settings import Settings
from stream.store.erase import ErasureRefused, erase_player
from stream.cli.output import Ladder


def register(app: typer.Typer) -> None:
    """Add ``stream erase`` to the CLI app."""
    app.command("erase")(erase_command)


def erase_command(
    ladder: Ladder,
    player: Annotated[str, typer.Argument(help="the player id to erase")],
    as_json: Annotated[bool, typer.Option("--json", help="print the outcome as JSON")] = False,
) -> None:
    """Delete a player's state, history and leaderboard entry; pseudonymise his id in stored rounds."""
    settings = Settings.from_env()
    try:
        done = run_with_store(settings, lambda store: erase_player(store, ladder, player,
                                                                   secret=settings.erasure_secret, now=time.time()),
                              write=True)
    except ErasureRefused as exc:
        fail(str(exc), EXIT_BAD_INPUT)
    typer.echo(json.dumps(asdict(done)) if as_json else
               f"erased a player of ladder {ladder!r}: now {done.pseudonym} in {done.rounds} stored rounds")
