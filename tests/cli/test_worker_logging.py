"""The worker's logging: its level holds for every library (no Faust spinner forcing DEBUG)."""

from __future__ import annotations

import logging

import faust
import pytest

from stream.pipeline.runtime.worker import make_worker


@pytest.mark.parametrize(("log_level", "expected"), [("warning", logging.WARNING), ("error", logging.ERROR),
                                                      ("critical", logging.CRITICAL), ("info", logging.INFO)])
def test_root_logger_keeps_the_worker_level(log_level: str, expected: int) -> None:
    root = logging.getLogger()
    saved_level, saved_handlers = root.level, list(root.handlers)
    root.handlers = [logging.NullHandler()]
    try:
        worker = make_worker(faust.App(f"log-test-{log_level}", autodiscover=False), log_level)
        assert worker.spinner is None
        worker.on_setup_root_logger(root, expected)  # what Faust calls while configuring logging
        assert root.level != logging.DEBUG
        assert not logging.getLogger("aiokafka").isEnabledFor(logging.DEBUG)
        assert logging.getLogger("stream").getEffectiveLevel() == expected
    finally:
        root.setLevel(saved_level)
        root.handlers = saved_handlers
