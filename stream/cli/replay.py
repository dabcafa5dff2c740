"""``stream replay`` and ``stream generate-synthetic``: batch commands (no Kafka, no Redis).

``replay`` validates the whole input as the stream accepts and registers it (``parse_round``,
``first_copies``) before rating anything, and writes its CSV atomically: on bad input (exit 2) or any
failure no output appears; ``--skip-rejected`` leaves a rejected round out, as the stream dead-letters it.
"""

from __future__ import annotations

import csv
from collections import Counter
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from stream.batch import Metrics, SourceError, read_rounds, synthetic_rounds, write_jsonl
from stream.batch.dedup import Deduplicated, first_copies
from stream.batch.models import LaddersReplay, Replayed, model_names, replay_ladders, replay_named, support
from stream.contracts.ordering import LadderOrder
from stream.batch.profiles import contest_history_rounds, match_rounds
from stream.contracts import Limits, RoundRejected, RoundResult
from stream.contracts.round import check_supported
from stream.engine import DEFAULT_PRESET, PRESETS
from stream.engine.ladders import Ladders, LaddersError, parse_ladders
from stream.cli.store_command import bad_input, json_option
from stream.settings import Settings

CSV_HEADER = ("ladder", "player", "mu", "sigma", "rounds")


def register(app: typer.Typer) -> None:
    """Add this module's commands to the CLI app."""
    app.command("replay")(replay_command)
    app.command("generate-synthetic")(generate_synthetic_command)


def replay_command(
    input: Annotated[Path, typer.Argument(help="JSONL file of RoundResult lines (.gz ok) or a directory of contest files (0.json, 1.json, ...)")],
    output: Annotated[Path, typer.Option("--output", "-o", help="CSV to write: ladder,player,mu,sigma,rounds")],
    preset_name: Annotated[str, typer.Option("--preset", help=f"engine preset: {', '.join(PRESETS)}")] = DEFAULT_PRESET,
    model_name: Annotated[str | None, typer.Option("--model", help=f"rating model, overrides --preset (default: the --preset's Elo-MMR): {', '.join(model_names())}")] = None,
    metrics: Annotated[bool, typer.Option("--metrics", help="score every round before its update (pair / rank metrics)")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the summary as JSON on stdout")] = False,
    skip_rejected: Annotated[bool, typer.Option("--skip-rejected", help="leave rejected rounds out (each reported on stderr), as the stream dead-letters them, instead of failing")] = False,
    ladders_option: Annotated[str | None, typer.Option("--ladders", help="a LADDERS configuration (JSON text or a file holding it): each ladder with its own model and parameters, as the stream rates it (--preset: the \"*\" model when it names none); rounds the stream rejects on a ladder (teams, except on a trueskill ladder) are rejected")] = None,
) -> None:
    """Replay rounds through the engine in process and write every player's final rating."""
    if preset_name not in PRESETS:
        bad_input(f"unknown preset {preset_name!r}; known: {', '.join(PRESETS)}")
    if model_name is not None and model_name not in model_names():
        bad_input(f"unknown model {model_name!r}; known: {', '.join(model_names())}")
    name = preset_name if model_name is None else model_name
    ladders = None if ladders_option is None else _ladders(ladders_option, preset_name, model_name, metrics)
    if not output.parent.is_dir() or output.is_dir():
        bad_input(f"cannot write {output}: parent directory missing or output is a directory")
    settings = Settings.from_env(connect=False)  # offline: reads a file, never Kafka or Redis
    started = time.perf_counter()
    rejected: list[SourceError] | None = [] if skip_rejected else None
    unique = load_accepted(input, settings, rejected, ladders if ladders is not None else [name])
    rounds = unique.rounds
    loaded = time.perf_counter()
    tracker = Metrics(len(rounds)) if metrics else None
    with progress(len(rounds)) as tick:
        result: Replayed = replay_named(rounds, name, metrics=tracker, on_round=tick) if ladders is None \
            else replay_ladders(rounds, ladders, on_round=tick)
    rated = time.perf_counter()
    players = _write_csv(result, output)
    skipped = set(result.skipped)  # the model's own answer: fewer than two entries, or a draw it does not rate
    summary: dict[str, Any] = {
        "input": str(input), "output": str(output),
        **({"ladders": result.models} if isinstance(result, LaddersReplay) else
           {"preset" if model_name is None else "model": name}),
        "rounds": len(rounds), "rated": len(rounds) - len(result.skipped), "skipped": len(result.skipped),
        "participations": sum(len(r.standings) for r in rounds if (r.ladder, r.round_id) not in skipped),
        "players": players, "load_s": round(loaded - started, 3), "rate_s": round(rated - loaded, 3),
        "duplicates": len(unique.duplicates),
        "rejected": dict(sorted(Counter(error.reason for error in rejected or []).items())),
    }
    if tracker is not None:
        summary["metrics"] = tracker.summary()
    if as_json:
        typer.echo(json.dumps(summary))
    else:
        typer.echo(" ".join(f"{k}={v}" for k, v in summary.items() if k != "metrics"))
        if tracker is not None:
            typer.echo(" ".join(f"{k}={v}" for k, v in tracker.summary().items()))



def _ladders(option: str, preset_name: str, model_name: str | None, metrics: bool) -> Ladders:
    """``--ladders``: JSON text, or the file holding it, resolved as the stream resolves LADDERS."""
    if model_name is not None or metrics:
        bad_input("--ladders gives every ladder its model: it goes with neither --model nor --metrics")
    try:
        return parse_ladders(json_option(option, "--ladders")[0], engine_preset=preset_name)
    except LaddersError as exc:
        bad_input(str(exc))


def load_accepted(input: Path, settings: Settings, rejected: list[SourceError] | None,
                  models: list[str] | Ladders) -> Deduplicated:
    """The rounds of ``input`` the stream would rate (acceptance, ``first_copies``, ``check_supported`` by
    each of ``models`` or each round's ladder). A rejected round exits 2, or with a ``rejected`` list is
    appended to it and reported on stderr."""
    try:
        by_time = LadderOrder.parse(settings.ladder_order).by_time
    except ValueError as exc:
        bad_input(f"configuration: {exc}")
    try:
        unique = first_copies(read_rounds(input, limits=Limits.from_settings(settings), rejected=rejected), by_time)
    except SourceError as exc:
        bad_input(f"bad input: {exc}")
    unsupported: list[tuple[int, RoundRejected]] = []
    kept = []
    for position, round_ in enumerate(unique.rounds):
        try:
            if isinstance(models, Ladders):
                check_supported(round_, support(models.of(round_.ladder).model), "the stream")
            for name in models if isinstance(models, list) else []:
                check_supported(round_, support(name), f"model {name!r}")
            kept.append(round_)
        except RoundRejected as exc:
            unsupported.append((position, exc))
    unique.rounds = kept
    for position, conflict in [*unique.conflicts, *unsupported]:
        error = SourceError(f"{input} (valid round #{position + 1})", f"{conflict.reason}: {conflict.message}",
                            conflict.field, conflict.reason)
        if rejected is None:
            bad_input(f"bad input: {error}")
        rejected.append(error)
    for error in rejected or []:
        typer.echo(f"rejected: {error}", err=True)
    return unique

PROFILES = ("paper", "contest-history", "matches")


def generate_synthetic_command(
    output: Annotated[Path, typer.Argument(help="JSONL file to write (.gz to compress)")],
    profile: Annotated[str, typer.Option("--profile", help="paper: §6.1 rounds; contest-history: a long real-shaped contest history (--scale); matches: duels/lobbies of --round-size from a pool of --players")] = "paper",
    players: Annotated[int | None, typer.Option("--players", help="size of the player pool [paper: 10,000; matches: 2,000]")] = None,
    rounds: Annotated[int | None, typer.Option("--rounds", help="number of rounds [paper: 50; matches: 10,000]")] = None,
    round_size: Annotated[int | None, typer.Option("--round-size", help="players per round [paper: 2,500; matches: 2]")] = None,
    seed: Annotated[int, typer.Option("--seed", help="random seed")] = 0,
    tie_quantum: Annotated[float, typer.Option("--tie-quantum", help="paper: round performances to this grid (creates ties); 0 = none")] = 0.0,
    scale: Annotated[float, typer.Option("--scale", help="contest-history: shrink rounds and round sizes by this factor (0 < scale <= 1)")] = 1.0,
    ladder: Annotated[str, typer.Option("--ladder", help="the ladder of every round")] = "default",
    id_prefix: Annotated[str | None, typer.Option("--id-prefix", help="round ids: this prefix and the round's number [paper: syn-; contest-history: hist-; matches: m-]")] = None,
) -> None:
    """Write synthetic rounds: the paper's §6.1 dataset (default), a contest history or matches."""
    if profile not in PROFILES:
        bad_input(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}")
    from stream.contracts import parse_round

    names = {"ladder": ladder, "id_prefix": id_prefix} if id_prefix is not None else {"ladder": ladder}
    try:  # the ladder and ids must be ones the service accepts: checked on a round carrying them
        parse_round({"round_id": f"{id_prefix or 'syn-'}00000", "ladder": ladder, "occurred_at": 0,
                     "standings": [{"player": "a", "rank": 1}, {"player": "b", "rank": 2}]},
                    limits=Limits.from_settings(Settings.from_env(connect=False)))
    except RoundRejected as exc:
        bad_input(f"--ladder / --id-prefix: {exc.field}: {exc.message}")
    rows: Iterable[RoundResult]
    if profile == "contest-history":
        if not 0 < scale <= 1:
            bad_input("need 0 < --scale <= 1")
        rows = contest_history_rounds(scale, seed, **names)
    else:
        paper = profile == "paper"
        n_players = players if players is not None else (10_000 if paper else 2_000)
        size = round_size if round_size is not None else (2_500 if paper else 2)
        n_rounds = rounds if rounds is not None else (50 if paper else 10_000)
        if not 2 <= size <= n_players:
            bad_input("need 2 <= --round-size <= --players")
        rows = (synthetic_rounds(n_players, n_rounds, size, seed, tie_quantum=tie_quantum, **names) if paper
                else match_rounds(n_players, n_rounds, size, seed, **names))
    with replaced(output) as tmp:
        count = write_jsonl(rows, tmp)
    typer.echo(f"wrote {count} rounds to {output}")


@contextmanager
def progress(total: int, unit: str = "round") -> Iterator[Callable[..., None] | None]:
    """A tqdm bar on stderr when it is a terminal, closed after the block: its step (any arguments), else None."""
    if not sys.stderr.isatty():
        yield None
        return
    from tqdm import tqdm

    with tqdm(total=total, unit=unit, file=sys.stderr) as bar:
        yield lambda *_: bar.update(1)


@contextmanager
def replaced(path: Path) -> Iterator[Path]:
    """A fresh temporary file beside ``path`` (same filesystem), renamed onto it when the block succeeds
    and removed in any case: ``path`` appears whole or not at all."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix, dir=path.parent or Path("."))
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _write_csv(result: Replayed, output: Path) -> int:
    """Write ladder,player,mu,sigma,rounds (repr floats: full precision) atomically."""
    rows = list(result.ratings())
    with replaced(output) as tmp, tmp.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([CSV_HEADER, *rows])
    return len(rows)
