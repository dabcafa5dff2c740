"""The worker's web server: the read API and dashboard of stream.api (with /metrics) in-process.

Faust's own web server stays off; the worker runs ``stream.api.app.create_app`` on
WEB_HOST:WEB_PORT from a Faust task, so one process rates and serves. The API's /metrics
exposes the default Prometheus registry, which holds the pipeline's metrics too.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from aiohttp import web

from stream.connections import redis_client

if TYPE_CHECKING:
    from stream.pipeline.app import Pipeline

log = logging.getLogger(__name__)


def mount_web(pipeline: "Pipeline") -> None:
    """Start the read API with the worker (a Faust task)."""
    settings = pipeline.ctx.settings

    @pipeline.app.task  # type: ignore[untyped-decorator]  # faust: untyped
    async def serve_read_api() -> None:
        from stream.api.app import create_app as create_api

        client = redis_client(settings)
        runner = web.AppRunner(create_api(client, settings))
        await runner.setup()
        await web.TCPSite(runner, settings.web_host, settings.web_port).start()
        log.info("read API on http://%s:%d/", settings.web_host, settings.web_port)
