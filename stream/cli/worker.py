"""``stream worker``: run the pipeline's Faust worker (phase one + phase two agents).

Creates the topics if they do not exist, then runs the Faust worker in this process until
SIGTERM / Ctrl-C. With ``--web`` (default) the worker also serves the read API and dashboard
(stream.api, with Prometheus /metrics including the pipeline's) on WEB_HOST:WEB_PORT, on its own
event loop in a thread (:class:`stream.api.server.ApiThread`): requests never wait on the
pipeline's loop, nor the pipeline on them.
"""

from __future__ import annotations

import typer

from stream.settings import Settings


def run_worker(settings: Settings, *, web: bool = True) -> None:
    """Check the configuration, create topics, build the app and run the Faust worker (blocks
    until stopped). An invalid ``LADDERS`` (or ``ENGINE_PRESET`` / ``DISPLAY_CONFIG`` / ``QUEUES``) exits with
    code 2 and names the bad key, before anything is connected (its ``LaddersError`` is reported
    by the command group, stream/cli/main.py)."""
    from stream.pipeline import topics
    from stream.pipeline.runtime.app import create_app
    from stream.pipeline.runtime.worker import make_worker
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
