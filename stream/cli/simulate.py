"""``stream simulate``: the matchmaker in a closed loop against baselines, in process (no Kafka,
no Redis): stream/matchmaking/simulate.py; with ``--through-stream`` the engine strategies are
rated by an embedded pipeline (stream/cli/simulate_stream.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from stream.cli.store_command import bad_input
from stream.engine import PRESETS
from stream.engine.ladders import LadderConfig, parse_ladders
from stream.engine.params import DUEL_PRESET
from stream.matchmaking.queues import QueueConfig, parse_queues
from stream.matchmaking.sim_plot import write_plots
from stream.matchmaking.sim_report import report, summarise
from stream.matchmaking.simulate import STRATEGIES, Record, SimConfig, default_queue, simulate


def register(app: typer.Typer) -> None:
    """Add this module's command to the CLI app."""
    app.command("simulate")(simulate_command)


def _text(value: str) -> str:
    """JSON given inline or as a file holding it."""
    path = Path(value)
    return path.read_text() if not value.lstrip().startswith("{") and path.is_file() else value


def _through_stream(sim: SimConfig, ladder: LadderConfig, queue: QueueConfig, strategies: tuple[str, ...],
                    ladders_text: str) -> dict[str, Record]:
    """simulate() with the engine strategies rated by an embedded pipeline (simulate_stream.py)."""
    import tempfile

    from stream.cli.simulate_stream import StreamRater, check_ladders, embedded_pipeline

    try:
        check_ladders(ladders_text, ladder, queue.ladder, [s for s in strategies if s != "openskill"])
    except ValueError as exc:
        bad_input(str(exc))
    with tempfile.TemporaryDirectory() as tmp, embedded_pipeline(ladders_text, Path(tmp) / "worker.log") as link:
        def rater(config: LadderConfig, names: list[str], tag: str) -> StreamRater:
            return StreamRater(config, names, tag, link=link, ladder_name=queue.ladder)
        return simulate(sim, ladder, queue, strategies, engine=rater)


def simulate_command(
    players: Annotated[int, typer.Option("--players", help="population size")] = 2000,
    games: Annotated[int, typer.Option("--games", help="stop once players have played this many games on average")] = 30,
    skill_sd: Annotated[float, typer.Option("--skill-sd", help="standard deviation of the hidden true skills (Elo points)")] = 350.0,
    drift: Annotated[float, typer.Option("--drift", help="sd of each true skill's random walk per simulated hour")] = 0.0,
    break_s: Annotated[float, typer.Option("--break-s", help="mean break between a player's games (s): Poisson arrivals")] = 60.0,
    tick_s: Annotated[float, typer.Option("--tick-s", help="seconds between matchmaking ticks")] = 1.0,
    window: Annotated[float, typer.Option("--window", help="rating window of the fixed-window baseline")] = 100.0,
    seed: Annotated[int, typer.Option("--seed", help="random seed (same population and arrivals for every strategy)")] = 0,
    strategies: Annotated[str, typer.Option("--strategies", help=f"comma-separated: {', '.join(STRATEGIES)}")] = ",".join(STRATEGIES),
    queues: Annotated[str | None, typer.Option("--queues", help="a QUEUES configuration (JSON text or a file): the duel queue to simulate")] = None,
    queue_name: Annotated[str | None, typer.Option("--queue", help="which --queues entry (default: the only one)")] = None,
    ladders: Annotated[str | None, typer.Option("--ladders", help="a LADDERS configuration (JSON text or a file): the queue's ladder model (an Elo-MMR preset); overrides --preset")] = None,
    preset: Annotated[str, typer.Option("--preset", help=f"the queue's ladder model without --ladders: an Elo-MMR preset ({', '.join(PRESETS)}; default: the duel preset)")] = DUEL_PRESET,
    as_json: Annotated[bool, typer.Option("--json", help="print the figures as JSON on stdout")] = False,
    plot: Annotated[Path | None, typer.Option("--plot", help="write fairness.svg, accuracy.svg, calibration.svg into this directory")] = None,
    through_stream: Annotated[bool, typer.Option("--through-stream", help="rate the engine strategies' matches through the real pipeline (an embedded broker, Redis and worker; slow) instead of in process")] = False,
) -> None:
    """Simulate players with hidden true skills queueing for duels: the matchmaker, a fixed
    rating window, the matchmaker over openskill ratings, random pairing and the ideal pairing;
    print fairness (true win probability within 35-65 %) by games played, pair accuracy, waits
    and calibration.

    The duels are rated by the duel preset, ``mmr-duel``, unless --preset or --ladders says
    otherwise."""
    chosen = tuple(s.strip() for s in strategies.split(",") if s.strip())
    unknown = [s for s in chosen if s not in STRATEGIES]
    if not chosen or unknown:
        bad_input(f"--strategies: unknown {', '.join(unknown) or '(none given)'}; known: {', '.join(STRATEGIES)}")
    if players < 2 or games < 1:
        bad_input("--players must be >= 2 and --games >= 1")
    for name, value in (("--skill-sd", skill_sd), ("--break-s", break_s), ("--tick-s", tick_s), ("--window", window)):
        if not value > 0:
            bad_input(f"{name} must be > 0")
    if drift < 0:
        bad_input("--drift must be >= 0")
    try:
        queue = default_queue()
        if queues is not None:
            parsed = parse_queues(_text(queues))
            if queue_name is None and len(parsed) != 1:
                bad_input(f"--queue: name one of {', '.join(parsed) or '(none configured)'}")
            name = queue_name or next(iter(parsed))
            if name not in parsed:
                bad_input(f"--queue: {name!r} is not in --queues ({', '.join(parsed)})")
            queue = parsed[name]
        if queue.players != 2:
            bad_input(f"queue {queue.name!r}: stream simulate plays duels (teams 2, team_size 1)")
        if preset not in PRESETS:
            bad_input(f"--preset: unknown preset {preset!r}; known: {', '.join(PRESETS)}")
        ladders_text = _text(ladders) if ladders else json.dumps({"*": {"model": preset}})
        ladder = parse_ladders(ladders_text).of(queue.ladder)
    except (ValueError, OSError) as exc:
        bad_input(str(exc))
    if ladder.rating_model is not None:
        bad_input(f"ladder {queue.ladder!r}: model {ladder.model!r}; stream simulate rates with an Elo-MMR preset")
    sim = SimConfig(players=players, games=games, skill_sd=skill_sd, drift_per_hour=drift, break_s=break_s,
                    tick_s=tick_s, seed=seed, window=window)
    if through_stream:
        records = _through_stream(sim, ladder, queue, chosen, ladders_text)
    else:
        records = simulate(sim, ladder, queue, chosen)
    summaries = {name: summarise(record) for name, record in records.items()}
    if as_json:
        typer.echo(json.dumps({name: s.to_dict() for name, s in summaries.items()}, indent=2))
    else:
        typer.echo(report(summaries))
    if plot is not None:
        for path in write_plots(summaries, plot):
            typer.echo(f"wrote {path}", err=True)

