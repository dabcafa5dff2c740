"""``stream evaluate``: the paper's Table 2 (pair inversion, rank deviation, rounds/s) for several
models on the user's own history, in process (no Kafka, no Redis)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Annotated

import typer

from stream.batch.evaluate import ModelFailed, evaluate
from stream.batch.models import model_names
from stream.cli.output import table
from stream.cli.replay import load_accepted, progress
from stream.cli.store_command import bad_input
from stream.settings import Settings

COLUMNS = ("model", "pair_all", "pair_exp", "rank_all", "rank_exp", "rounds/s", "seconds")


def register(app: typer.Typer) -> None:
    """Add this module's command to the CLI app."""
    app.command("evaluate")(evaluate_command)


def evaluate_command(
    input: Annotated[Path, typer.Argument(help="JSONL file of RoundResult lines (.gz ok) or a directory of contest files")],
    models: Annotated[str, typer.Option("--models", help="comma-separated model names (default: all)")] = ",".join(model_names()),
    as_json: Annotated[bool, typer.Option("--json", help="print the table as JSON on stdout")] = False,
    score_from: Annotated[int | None, typer.Option("--score-from", min=0, help="first round scored (default: the "
                                                   "paper's rule, the first 10 % not scored; 0: every round, as the "
                                                   "worker's online rating health)")] = None,
) -> None:
    """Replay each model with its defaults and print pair inversion (share of correctly ordered
    pairs, higher is better), rank deviation (lower is better) for all players already rated and
    for those with >= 5 earlier rounds (first 10 % of rounds not scored), and rounds/s."""
    names = [m.strip() for m in models.split(",") if m.strip()]
    unknown = [m for m in names if m not in model_names()]
    if not names or unknown:
        bad_input(f"unknown model(s) {', '.join(unknown) or '(none given)'}; known: {', '.join(model_names())}")
    if len(set(names)) != len(names):
        bad_input("a model is listed twice")
    rounds = load_accepted(input, Settings.from_env(connect=False), None, names).rounds
    try:
        with progress(len(rounds) * len(names)) as tick:
            found = evaluate(rounds, names, on_round=tick, start=score_from)
    except ModelFailed as exc:
        bad_input(f"{exc}; leave it out of --models")
    if as_json:
        rows = [{k: None if isinstance(v, float) and math.isnan(v) else v for k, v in dataclasses.asdict(row).items()}
                for row in found]  # nan (nobody scored, e.g. no experienced players yet) -> null
        typer.echo(json.dumps({"input": str(input), "rounds": len(rounds), "models": rows}))
        return
    typer.echo(f"{input}: {len(rounds)} rounds; pair: % of pairs ordered right (higher is better), "
               "rank: rank deviation (lower is better); exp = players with >= 5 earlier rounds")
    typer.echo(table(list(COLUMNS), [[row.model, f"{row.pair_all:.2f}", f"{row.pair_exp:.2f}", f"{row.rank_all:.3f}",
                                       f"{row.rank_exp:.3f}", f"{row.rounds_per_s:.1f}", f"{row.seconds:.2f}"]
                                      for row in found], right_from=1))
