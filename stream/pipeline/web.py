"""The worker's web server: Prometheus /metrics, and the read API of stream.api when present."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

if TYPE_CHECKING:
    from stream.pipeline.app import Pipeline

log = logging.getLogger(__name__)


def mount_web(pipeline: "Pipeline") -> None:
    """Add /metrics to the Faust web server, and the read API's routes if stream.api provides them."""
    app = pipeline.app

    @app.page("/metrics")
    async def metrics_page(web, request):  # type: ignore[no-untyped-def]
        return web.bytes(generate_latest(), content_type=CONTENT_TYPE_LATEST.split(";")[0])

    try:
        from stream.api.app import create_app as create_api
    except ImportError:  # the read API has not landed yet
        log.info("stream.api.app not available: the worker serves /metrics only")
        return

    @app.on_webserver_init.connect
    async def _mount_api(web, **kwargs):  # type: ignore[no-untyped-def]
        api = create_api(pipeline.ctx.settings)
        web.web_app.add_subapp("/api", api)
