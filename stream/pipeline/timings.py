"""Where each phase-one and phase-two batch's time went, one JSON line per batch (BATCH_TIMINGS_DIR).

Off unless the setting names a directory: then each worker appends to ``<dir>/<pid>.jsonl`` one
line per batch: phase, partitions, size, ``at`` (when taken), ``queued`` (seconds since its oldest
record was produced), then the seconds of each step (phase one: ``handle``, ``acks``; phase two:
``apply``, ``emit``). A bench aid (bench/pipeline.py ``--breakdown``), not meant for production.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from stream.pipeline.messages import Incoming

log = logging.getLogger(__name__)


class BatchTimings:
    """Appends one line per batch to ``<directory>/<pid>.jsonl``; does nothing if ``directory`` is empty."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._file: IO[str] | None = None

    def record(self, phase: int, events: Sequence[Incoming], taken_at: float, steps: dict[str, float]) -> None:
        """Write the line of a batch of ``events`` taken at ``taken_at`` (epoch seconds) whose steps
        took ``steps`` (name -> seconds)."""
        if not self.directory:
            return
        stamps = [e.timestamp for e in events if e.timestamp is not None]
        line = {"phase": phase, "partitions": sorted({e.origin.partition for e in events if e.origin.partition is not None}),
                "size": len(events), "at": taken_at, "queued": taken_at - min(stamps) if stamps else None, **steps}
        try:
            if self._file is None:
                Path(self.directory).mkdir(parents=True, exist_ok=True)
                self._file = open(Path(self.directory) / f"{os.getpid()}.jsonl", "a", buffering=1)
            self._file.write(json.dumps(line) + "\n")
        except (OSError, ValueError) as exc:  # a bench aid never fails a batch: turned off instead
            log.warning("BATCH_TIMINGS_DIR %r cannot be written (%s): batch timings off", self.directory, exc)
            self.directory = ""
