"""``stream api``: serve the read API and dashboard standalone (the worker mounts the same app)."""

from __future__ import annotations

from typing import Annotated

import typer
from aiohttp import web

from stream.api.health import KafkaProbe
from stream.api.server import api_redis_client, build_app
from stream.engine.ladders import parse_ladders
from stream.settings import Settings


def register(app: typer.Typer) -> None:
    app.command("api")(api_command)


def api_command(
    host: Annotated[str | None, typer.Option(help="bind address (default WEB_HOST)")] = None,
    port: Annotated[int | None, typer.Option(help="port (default WEB_PORT)")] = None,
) -> None:
    """Serve the read API and the dashboard over Redis (REDIS_URL)."""
    settings = Settings.from_env()
    # the display and model of every ladder: a bad LADDERS refuses to start (exit 2, naming the key)
    parse_ladders(settings.ladders, engine_preset=settings.engine_preset, display_config=settings.display_config)
    from stream.cli.reach import require_port, serve_or_exit, warn_unreachable_redis

    where = "--host/--port" if host or port else "WEB_HOST:WEB_PORT"
    host, port = host or settings.web_host, port or settings.web_port
    require_port(host, port, where)
    warn_unreachable_redis(settings)  # it still starts: /health answers 503 until Redis does
    app = build_app(settings, api_redis_client(settings), KafkaProbe(settings).start())
    serve_or_exit(lambda: web.run_app(app, host=host, port=port, print=typer.echo), host, port, where)
