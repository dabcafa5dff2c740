"""``stream worker``: run the pipeline's Faust worker (phase one + phase two agents) until SIGTERM / Ctrl-C;
with ``--web`` (default) also the read API and dashboard on WEB_HOST:WEB_PORT, on its own event loop in
a thread (:class:`stream.api.server.ApiThread`), so requests and the pipeline never wait on each other.
"""

from __future__ import annotations

import typer

from stream.settings import Settings


def run_worker(settings: Settings, *, web: bool = True) -> None:
    """Check the configuration (a bad one exits 2 before anything connects), create topics, build the app and
    run the Faust worker (blocks until stopped)."""
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
