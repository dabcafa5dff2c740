"""``stream worker``: run the pipeline's Faust worker (phase one + phase two agents).

Creates the topics if they do not exist, then runs the Faust worker in this process until
SIGTERM / Ctrl-C. With ``--web`` (default) the worker also serves the read API and dashboard
(stream.api, with Prometheus /metrics including the pipeline's) on WEB_HOST:WEB_PORT.
"""

from __future__ import annotations

import logging

import typer

from stream.settings import Settings

#: Faust's log level names (it rejects "warning").
FAUST_LOG_LEVELS = {"critical": "crit", "error": "error", "warning": "warn", "warn": "warn", "info": "info",
                    "debug": "debug"}


def run_worker(settings: Settings, *, web: bool = True) -> None:
    """Create topics, build the app and run the Faust worker (blocks until stopped)."""
    from faust import Worker

    from stream.pipeline import topics
    from stream.pipeline.app import create_app
    from stream.pipeline.web import mount_web

    topics.ensure(settings)
    pipeline = create_app(settings)
    if web:
        mount_web(pipeline)
    level = FAUST_LOG_LEVELS.get(settings.log_level.lower(), "info")
    logging.getLogger("stream").setLevel(level.upper() if level != "warn" else "WARNING")
    Worker(pipeline.app, loglevel=level).execute_from_commandline()


def register(app: typer.Typer) -> None:
    @app.command("worker")
    def worker(web: bool = typer.Option(True, help="serve the read API and /metrics on WEB_HOST:WEB_PORT")) -> None:
        """Run a pipeline worker: rate the rounds on Kafka into Redis and emit rating changes."""
        run_worker(Settings.from_env(), web=web)
