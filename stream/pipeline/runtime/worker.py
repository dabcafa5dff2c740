"""The Faust worker that runs the pipeline's app: its log level and its graceful stop (``stream worker``)."""

from __future__ import annotations

import logging

import faust
from faust import Worker

from stream.pipeline.runtime.compat import graceful_worker
from stream.pipeline.shutdown import Drain

#: Faust's log level names (it rejects "warning"); logging's are the LOG_LEVEL words in upper case.
FAUST_LOG_LEVELS = {"critical": "crit", "error": "error", "warning": "warn", "warn": "warn", "info": "info",
                    "debug": "debug"}


def make_worker(app: faust.App, log_level: str, drain: Drain | None = None, shutdown_timeout_s: float = 20.0,
                ) -> faust.Worker:
    """A Faust worker for ``app`` logging at ``log_level``; with ``drain``, SIGTERM first finishes the batches
    in hand and commits, within ``shutdown_timeout_s``. No spinner: it set the ROOT logger to DEBUG (~3 % CPU)."""
    level = FAUST_LOG_LEVELS.get(log_level.lower(), "info")
    logging.getLogger("stream").setLevel(logging.getLevelNamesMapping().get(log_level.upper(), logging.INFO))
    if drain is None:
        worker = Worker(app, loglevel=level)
    else:
        worker = graceful_worker(app, level, lambda: drain.run(shutdown_timeout_s, app.consumer.commit))
    worker.spinner = None
    return worker
