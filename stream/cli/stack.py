"""``stream stack``: run the embedded local stack (Tansu broker + redis-server), optionally with a demo.

Both services on free loopback ports, recorded in the stack's own state file (other commands find them
when KAFKA_BOOTSTRAP / REDIS_URL are unset; ``STACK_NAME`` picks one of several), until Ctrl-C.
``--demo`` also runs a worker (API, dashboard, metrics) and publishes paced synthetic rounds.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import cast

import typer

from stream.cli.store_command import bad_input
from stream.contracts import RoundResult
from stream.settings import Settings, remove_state, running_stacks, stack_state_path, write_state
from stream.pipeline.topics import ensure_topics, partition_counts
from stream.stack.local import LocalStack
from stream.stack.ports import free_port, stop_process

#: Demo defaults: synthetic players, rounds, field size and publishing pace.
DEMO_PLAYERS = 200
DEMO_ROUNDS = 500
DEMO_FIELD = 20
DEMO_ROUNDS_PER_S = 2.0
DEMO_LADDER = "default"
#: Round ids of the demo stream: demo-00000, ... (not generate-synthetic's syn-*, so its files publish beside it).
DEMO_ID_PREFIX = "demo-"
#: Seconds a child process gets after SIGTERM before it is killed.
CHILD_STOP_TIMEOUT_S = 15.0
#: Seconds between two liveness checks of the services while waiting for Ctrl-C.
WATCH_INTERVAL_S = 0.5
#: Stack names (they name files).
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def stop_child(child: subprocess.Popen[bytes]) -> None:
    """SIGTERM a child, SIGKILL it if it does not exit in time."""
    if child.poll() is None:
        stop_process(child, CHILD_STOP_TIMEOUT_S)


def start_child(args: list[str], env: dict[str, str], log_path: str) -> subprocess.Popen[bytes]:
    """``stream <args>`` as a subprocess with the given environment added; output to ``log_path``."""
    with open(log_path, "ab") as log:
        # own session: a terminal's Ctrl-C reaches only `stream stack`, which stops its children in order
        return subprocess.Popen([sys.executable, "-m", "stream", *args], env={**os.environ, **env},
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


@dataclass
class DemoProgress:
    """The demo stream's publisher and what ``stream stack`` says about it: when every round is
    published, then when every one of them is rated (or recorded without an outcome)."""

    settings: Settings
    sent: int | None = None  # set once publishing ended
    said: set[str] = field(default_factory=set)

    def publish(self, rounds: Iterator[RoundResult], per_second: float, stop: threading.Event) -> None:
        """Produce ``rounds`` to the ``rounds`` topic at ``per_second`` (0: as fast as the producer
        takes them), until exhausted or ``stop`` is set; closing the producer waits for the last ones."""
        from stream.cli.publish import RoundProducer

        sent = 0
        with closing(RoundProducer(self.settings)) as producer:
            for round_ in rounds:
                if stop.is_set():
                    break
                producer.send(round_)
                sent += 1
                if per_second and stop.wait(1.0 / per_second):
                    break
        self.sent = sent

    def news(self) -> list[str]:
        """Lines to print now (each once)."""
        out = []
        if self.sent is not None and "published" not in self.said:
            self.said.add("published")
            out.append(f"demo stream finished: {self.sent} rounds published to ladder {DEMO_LADDER!r}; "
                       "the stack keeps running until Ctrl-C")
        if self.sent is not None and "rated" not in self.said and self._done() >= self.sent:
            self.said.add("rated")
            out.append(f"all {self.sent} demo rounds are rated")
        return out

    def _done(self) -> int:
        from stream.connections import redis_client
        from stream.store.queries import rounds_rated

        client = redis_client(self.settings, asyncio=False)
        try:
            return rounds_rated(client, DEMO_LADDER)
        except Exception:  # noqa: BLE001 - Redis going away while stopping: nothing to say
            return -1
        finally:
            client.close()


def _banner(stack: LocalStack, name: str, state_file: str, web_port: int | None) -> str:
    env = stack.env()
    script = Path(sys.executable).parent / "stream"  # how to run ``stream`` from a shell: on PATH, the venv's, -m
    command = "stream" if shutil.which("stream") else str(script) if script.exists() else f"{sys.executable} -m stream"
    lines = [
        f"embedded stack {name!r} running:",
        f"  Kafka (Tansu)  {stack.bootstrap}",
        f"  Redis          {stack.redis_url}",
        "environment for other shells (picked up automatically while this runs, via",
        f"  {state_file}):",
        *(f"  export {k}={v}" for k, v in env.items()),
    ]
    if web_port is not None:
        lines += [
            "demo: worker + synthetic rounds",
            f"  dashboard      http://127.0.0.1:{web_port}/",
            f"  live changes   {command} tail",
            f"  leaderboard    {command} leaderboard {DEMO_LADDER}",
            f"  rejections     {command} rejected",
        ]
    if len(running_stacks()) > 1:
        lines.append(f"other stacks are running too: other commands need `export STACK_NAME={name}`")
    lines.append("Ctrl-C stops everything.")
    return "\n".join(lines)


def stack(
    name: str = typer.Option("", "--name", help="this stack's name (its state file and logs); "
                             "default k<kafka port>-r<redis port>"),
    kafka_port: int = typer.Option(0, help="broker port (0: a free one)"),
    redis_port: int = typer.Option(0, help="redis-server port (0: a free one)"),
    demo: bool = typer.Option(False, "--demo", help="also run a worker and publish synthetic rounds"),
    web_port: int = typer.Option(0, help="--demo: the worker's dashboard port (0: WEB_PORT, or a free one when that is taken)"),
    demo_players: int = typer.Option(DEMO_PLAYERS, help="--demo: synthetic players"),
    demo_rounds_total: int = typer.Option(DEMO_ROUNDS, "--demo-rounds", help="--demo: rounds to publish"),
    demo_rate: float = typer.Option(DEMO_ROUNDS_PER_S, help="--demo: rounds per second"),
) -> None:
    """Run a private Kafka-protocol broker and redis-server (and with --demo a worker + demo stream)."""
    Settings.from_env(environ=dict(os.environ))  # a bad setting stops here, before anything starts
    kafka_port, redis_port = kafka_port or free_port(), redis_port or free_port()
    name = name or f"k{kafka_port}-r{redis_port}"
    if not NAME_PATTERN.fullmatch(name):
        bad_input(f"--name must match {NAME_PATTERN.pattern}, got {name!r}")
    state_file = stack_state_path(name)
    running = running_stacks()
    if name in running or (os.environ.get("STACK_STATE_FILE") and running):
        bad_input(f"a stack is already running with the state file {state_file} (stop it, or choose another --name)")
    local = LocalStack.on_ports(kafka_port, redis_port, detached=True)
    children: list[subprocess.Popen[bytes]] = []  # stopped last first, then the stack
    stop_event = threading.Event()
    logs = state_file.parent / f"{state_file.stem}-logs"  # kept after exit, for post-mortems
    local.broker.workdir = logs
    # A plain list, not a threading.Event: a handler that takes a lock can deadlock when the signal
    # lands while the main thread holds that same lock inside Event.wait.
    signals: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        signals.append(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        local.start()
        env = local.env()
        settings = Settings.from_env(environ={**os.environ, **env})
        # Created up front so the partition counts are deliberate (see stream/stack/README.md).
        ensure_topics(local.bootstrap, partition_counts(settings))
        write_state(state_file, env, name=name, web_port=web_port or None, logs=str(logs))
        progress: DemoProgress | None = None
        shown_port: int | None = None
        if demo:
            from stream.cli.reach import port_problem  # WEB_PORT when nothing listens there, else a free port

            shown_port = web_port or (settings.web_port if port_problem("127.0.0.1", settings.web_port) is None
                                      else free_port())
            worker_env = {**env, "WEB_PORT": str(shown_port)}
            # One worker rates and serves the read API, the dashboard and /metrics.
            children.append(start_child(["worker"], worker_env, str(logs / "worker.log")))
            write_state(state_file, env, name=name, web_port=shown_port, logs=str(logs))
            from stream.batch.synthetic import synthetic_rounds  # paper §6.1: drifting skills, noisy performances

            rounds = synthetic_rounds(demo_players, demo_rounds_total, DEMO_FIELD, ladder=DEMO_LADDER,
                                      id_prefix=DEMO_ID_PREFIX)
            progress = DemoProgress(settings)
            threading.Thread(target=progress.publish, args=(rounds, demo_rate, stop_event),
                             name="demo-publisher", daemon=True).start()
        typer.echo(_banner(local, name, str(state_file), shown_port))
        typer.echo(f"logs: {logs}")
        while not signals:
            time.sleep(WATCH_INTERVAL_S)
            if not local.broker.alive():
                typer.echo("the broker exited; stopping", err=True)
                raise typer.Exit(1)
            for child in children:
                if child.poll() is not None:
                    typer.echo(f"`{' '.join(cast('list[str]', child.args)[2:])}` exited with code {child.returncode} "
                               f"(logs: {logs}); stopping", err=True)
                    raise typer.Exit(1)
            if progress is not None:
                for line in progress.news():
                    typer.echo(line)
        typer.echo("stopping…")
    finally:
        stop_event.set()
        for child in reversed(children):
            stop_child(child)
        local.close()
        remove_state(state_file)
        typer.echo(f"stopped: the embedded broker and Redis kept their data in memory and a temporary folder "
                   f"(removed): ratings and topics are gone; kept: the logs in {logs}")
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def register(app: typer.Typer) -> None:
    """Add ``stream stack`` to the CLI."""
    app.command("stack")(stack)
