"""JSON errors for the read API: every 4xx/5xx answer is ``{"error": code, "message": text}``."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from stream.logsafe import log_safe

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ApiError(Exception):
    """An error with a machine code, rendered as JSON by :func:`json_errors`."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status_code = status
        self.code = code
        self.message = message
        self.headers = headers or {}


def bad_request(message: str, code: str = "bad_request") -> ApiError:
    return ApiError(400, code, message)


def not_found(message: str, code: str = "not_found") -> ApiError:
    return ApiError(404, code, message)


def _json_error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"error": code, "message": message}, status=status, headers=headers)


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Turn every HTTP error (ours and aiohttp's own: 404 route, 405, 413) into JSON."""
    try:
        return await handler(request)
    except ApiError as exc:
        return _json_error(exc.status_code, exc.code, exc.message, exc.headers)
    except web.HTTPException as exc:
        if exc.status_code < 400:
            raise
        code = {404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}.get(exc.status_code, "http_error")
        return _json_error(exc.status_code, code, exc.reason)
    except Exception:  # a bug or Redis down: answer 500 as JSON, keep the details in the log
        log.exception("read API request failed: %s %s", request.method, log_safe(request.path))
        return _json_error(500, "internal", "internal error")
