"""``timings.BatchTimings``: off without a directory; with one, one JSON line per batch with the
time its oldest record waited and each step (bench/pipeline.py reads them back)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from stream.pipeline.messages import Incoming, Origin
from stream.pipeline.timings import BatchTimings


def events() -> list[Incoming]:
    return [Incoming(b"a", origin=Origin("rounds", 2, 7), timestamp=100.0),
            Incoming(b"b", origin=Origin("rounds", 0, 3), timestamp=99.5),
            Incoming(b"c", origin=Origin("rounds", 2, 8), timestamp=None)]


def test_without_a_directory_nothing_is_written() -> None:
    timings = BatchTimings("")
    assert not timings.directory  # off
    timings.record(1, events(), 100.25, {"handle": 0.01, "acks": 0.002})
    assert timings._file is None


def test_each_batch_is_one_line_with_its_wait_and_steps(tmp_path: Path) -> None:
    timings = BatchTimings(str(tmp_path / "batches"))
    assert timings.directory  # on
    timings.record(1, events(), 100.25, {"handle": 0.01, "acks": 0.002})
    timings.record(2, events()[2:], 101.0, {"apply": 0.004, "emit": 0.003})
    [path] = (tmp_path / "batches").iterdir()
    assert path.name == f"{os.getpid()}.jsonl"
    first, second = [json.loads(line) for line in path.read_text().splitlines()]
    assert first == {"phase": 1, "partitions": [0, 2], "size": 3, "at": 100.25, "queued": 0.75, "handle": 0.01,
                     "acks": 0.002}
    assert second == {"phase": 2, "partitions": [2], "size": 1, "at": 101.0, "queued": None, "apply": 0.004,
                      "emit": 0.003}


def test_an_unwritable_directory_turns_timings_off_without_failing_the_batch(tmp_path: Path) -> None:
    """A BATCH_TIMINGS_DIR under a regular file cannot be written: the batch goes on, the timings
    turn off."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    timings = BatchTimings(str(blocker / "sub"))
    timings.record(1, [], 0.0, {"handle": 0.1})
    assert not timings.directory  # off
