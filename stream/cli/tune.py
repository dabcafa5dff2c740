"""``stream tune``: search a model's parameters on the first part of a history, score them on the rest
beside the defaults (:mod:`stream.batch.tune`), in process, and print a ``LADDERS`` entry to paste."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated

import typer

from stream.batch import SourceError, read_rounds
from stream.batch.models import model_names
from stream.batch.tune import SPACES, Candidate, compare_held_out, held_out, split_index, tune
from stream.cli.output import table
from stream.cli.replay import progress
from stream.cli.store_command import bad_input
from stream.contracts import Limits
from stream.settings import Settings

METRIC_COLUMNS = ("pair_all", "pair_exp", "rank_all", "rank_exp")
LADDERS_NOTE = ("LADDERS entry (set it in the workers' LADDERS: a ladder that has rated rounds keeps its "
                "model; stream replay --ladders rates the same way):")


def register(app: typer.Typer) -> None:
    """Add this module's command to the CLI app."""
    app.command("tune")(tune_command)


def tune_command(
    input: Annotated[Path, typer.Argument(help="JSONL file of RoundResult lines (.gz ok) or a directory of contest files")],
    model: Annotated[str, typer.Option("--model", help=f"model to tune: {', '.join(SPACES)}")],
    budget: Annotated[int, typer.Option("--budget", help="parameter sets drawn besides the defaults")] = 32,
    holdout: Annotated[float, typer.Option("--holdout", help="share of the last rounds held out (scored, not tuned on)")] = 0.3,
    seed: Annotated[int, typer.Option("--seed", help="seed of the random search (same seed, same result)")] = 0,
    jobs: Annotated[int | None, typer.Option("--jobs", help="processes (default: the machine's cores)")] = None,
    compare: Annotated[str | None, typer.Option("--compare", help="also score this model's defaults on the held-out rounds (e.g. paper-codeforces)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON on stdout")] = False,
) -> None:
    """Random search of the model's parameters on the first part of the history (objective: pair
    inversion of players with >= 5 earlier rounds), then the best and the defaults rated through
    every round and scored on the held-out last part only."""
    if model not in SPACES:
        bad_input(f"unknown model {model!r}; known: {', '.join(SPACES)}")
    if compare is not None and compare not in model_names():
        bad_input(f"unknown --compare model {compare!r}; known: {', '.join(model_names())}")
    if budget < 0:
        bad_input("--budget must be >= 0")
    if jobs is not None and jobs < 1:
        bad_input("--jobs must be >= 1")
    if not 0.0 < holdout < 1.0:
        bad_input("--holdout must be in (0, 1)")
    try:
        rounds = read_rounds(input, limits=Limits.from_settings(Settings.from_env(connect=False)))
    except SourceError as exc:
        bad_input(f"bad input: {exc}")
    try:
        split_index(len(rounds), holdout)
    except ValueError as exc:
        bad_input(str(exc))
    try:
        with progress(budget + 1, unit="candidate") as tick:
            result = tune(rounds, model, budget=budget, holdout=holdout, seed=seed, jobs=jobs, on_candidate=tick)
    except ValueError as exc:
        bad_input(str(exc))
    rows: list[tuple[str, str, Candidate | None, float]] = [
        ("defaults", model, result.candidates[0], result.objectives[0]),
        ("tuned", model, result.best_params, result.objectives[result.best]),
    ]
    if compare is not None:
        rows.append((f"compare {compare}", compare, None, math.nan))
    scored = [held_out(rounds, result.split, name, params) for _label, name, params, _obj in rows]
    ladders = {r.ladder for r in rounds}  # the input's ladder when it has one, else the fallback "*"
    entry = {ladders.pop() if len(ladders) == 1 else "*": {"model": model, "params": result.best_params}}
    better, worse = compare_held_out(scored[0], scored[1])
    if as_json:
        typer.echo(json.dumps({
            "input": str(input), "model": model, "rounds": len(rounds), "tune_rounds": result.split,
            "holdout_rounds": len(rounds) - result.split, "budget": budget, "seed": seed,
            "objective": "pair_exp on the tuning part",
            "results": [{"label": label, "model": name, "params": params, "tune_pair_exp": _num(obj),
                         "holdout": {k: _num(getattr(s, k)) for k in METRIC_COLUMNS},
                         "holdout_scored_rounds": s.scored_rounds}
                        for (label, name, params, obj), s in zip(rows, scored)],
            "candidates": [{"params": c, "tune_pair_exp": _num(o)}
                           for c, o in zip(result.candidates, result.objectives)],
            "ladders": entry,
            "recommended": "tuned" if better else "defaults",
            "tuned_better_on": better, "defaults_better_on": worse,
        }))
        return
    typer.echo(f"{input}: {len(rounds)} rounds; tuned {model} on the first {result.split} "
               f"({budget + 1} parameter sets, objective: pair inversion of players with >= 5 earlier rounds), "
               f"held out the last {len(rounds) - result.split}; pair: % of pairs ordered right (higher is "
               "better), rank: rank deviation (lower is better)")
    cells = [[label, " ".join(f"{k}={v:g}" for k, v in params.items()) if params is not None else "(its defaults)",
              "-" if math.isnan(obj) else f"{obj:.2f}",
              *(f"{getattr(s, c):.2f}" if c.startswith("pair") else f"{getattr(s, c):.3f}" for c in METRIC_COLUMNS)]
             for (label, _name, params, obj), s in zip(rows, scored)]
    typer.echo(table(["", "params", "tune pair_exp", *(f"held-out {c}" for c in METRIC_COLUMNS)], cells, right_from=2))
    if not better:  # nothing to paste: the defaults are what the ladder already gets
        how = "beat the tuned parameters on every held-out metric" if worse and len(worse) == len(
            [c for c in METRIC_COLUMNS if not math.isnan(getattr(scored[0], c))]) else "do as well as the tuned parameters"
        typer.echo(f"keep the defaults: they {how} ({', '.join(worse) or 'no metric differs'}); no LADDERS entry "
                   f"to set (try a longer history, a larger --budget or another --model)")
        return
    typer.echo(LADDERS_NOTE)
    typer.echo(json.dumps(entry))
    if worse:
        typer.echo(f"note: the tuned parameters do better on {', '.join(better)} but worse on {', '.join(worse)}")


def _num(value: float) -> float | None:
    """NaN (nobody scored) as JSON null."""
    return None if math.isnan(value) else value
