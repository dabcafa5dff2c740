"""``stream worker``: run the pipeline's Faust worker (phase one + phase two agents).

Creates the topics if they do not exist, then runs the Faust worker in this process until
SIGTERM / Ctrl-C. With ``--web`` (default) the worker also serves the read API and dashboard
(stream.api, with Prometheus /metrics including the pipeline's) on WEB_HOST:WEB_PORT, on its own
event loop in a thread (:class:`stream.api.server.ApiThread`): requests never wait on the
pipeline's loop, nor the pipeline on them.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import typer

from stream.settings import Settings

if TYPE_CHECKING:
    import faust

    from stream.pipeline.shutdown import Drain

#: Faust's log level names (it rejects "warning") and the matching logging levels.
FAUST_LOG_LEVELS = {"critical": "crit", "error": "error", "warning": "warn", "warn": "warn", "info": "info",
                    "debug": "debug"}
LOGGING_LEVELS = {"crit": logging.CRITICAL, "error": logging.ERROR, "warn": logging.WARNING, "info": logging.INFO,
                  "debug": logging.DEBUG}


def make_worker(app: faust.App, log_level: str, drain: Drain | None = None, shutdown_timeout_s: float = 20.0,
                ) -> faust.Worker:
    """A Faust worker for ``app`` logging at ``log_level`` (LOG_LEVEL), without the terminal spinner;
    with ``drain``, SIGTERM first finishes the batches in hand and commits, within
    ``shutdown_timeout_s`` (SHUTDOWN_TIMEOUT_S; ``stream.pipeline.shutdown``).

    Faust's spinner (on whenever the level is warn or above) sets the ROOT logger to DEBUG so it can
    spin on every record: every library's debug record was then built and dropped, ~3 % of a
    busy worker's CPU (aiokafka logs each request at debug)."""
    from faust import Worker

    from stream.pipeline.compat import graceful_worker

    level = FAUST_LOG_LEVELS.get(log_level.lower(), "info")
    logging.getLogger("stream").setLevel(LOGGING_LEVELS[level])
    if drain is None:
        worker = Worker(app, loglevel=level)
    else:
        worker = graceful_worker(app, level, lambda: drain.run(shutdown_timeout_s, app.consumer.commit))
    worker.spinner = None
    return worker


def run_worker(settings: Settings, *, web: bool = True) -> None:
    """Check the configuration, create topics, build the app and run the Faust worker (blocks
    until stopped). An invalid ``LADDERS`` (or ``ENGINE_PRESET`` / ``DISPLAY_CONFIG`` / ``QUEUES``) exits with
    code 2 and names the bad key, before anything is connected (its ``LaddersError`` is reported
    by the command group, stream/cli/main.py)."""
    from stream.pipeline import topics
    from stream.pipeline.app import create_app
    from stream.pipeline.context import load_ladders, load_queues

    from stream.cli.reach import announce_worker, require, require_port, serve_or_exit

    load_queues(settings, load_ladders(settings))
    if web:
        require_port(settings.web_host, settings.web_port, "WEB_HOST:WEB_PORT")
    require(settings, kafka=True, redis=True)  # unreachable: one line and exit 4, not a healthy-looking start
    topics.ensure(settings)
    pipeline = create_app(settings)
    worker = make_worker(pipeline.app, settings.log_level, pipeline.drain, settings.shutdown_timeout_s)
    if web:
        from stream.api.server import ApiThread

        serve_or_exit(ApiThread(settings, status=pipeline.status).start, settings.web_host, settings.web_port,
                      "WEB_HOST:WEB_PORT")
    announce_worker(settings, web=web)
    worker.execute_from_commandline()


def register(app: typer.Typer) -> None:
    @app.command("worker")
    def worker(web: bool = typer.Option(True, help="serve the read API and /metrics on WEB_HOST:WEB_PORT")) -> None:
        """Run a pipeline worker: rate the rounds on Kafka into Redis and emit rating changes."""
        run_worker(Settings.from_env(), web=web)
