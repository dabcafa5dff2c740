"""bench/floor.py runs end to end on a tiny input and reports what it moved (never its timings)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration


def test_floor_bench_moves_every_mandated_message_and_reports_ratios() -> None:
    run = subprocess.run([sys.executable, str(REPO / "bench" / "floor.py"), "--sizes", "10", "--rounds", "3"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    row = next(line for line in run.stdout.splitlines() if line.startswith("| 10 |"))
    cells = [cell.strip().strip("*") for cell in row.strip("|").split("|")]
    size, rounds, participations, messages = (int(c.replace(",", "")) for c in cells[:4])
    assert (size, rounds, participations) == (10, 3, 30)
    # per round: the round itself, one fan-out per partition holding some of its 10 players (1 to 4), 10 events
    assert 3 + 3 + 30 <= messages <= 3 + 12 + 30
    figures = [float(c.rstrip("x")) for c in cells[4:]]  # confluent_kafka is in the test extra: no "nan"
    assert all(value >= 0 for value in figures) and figures[-1] > 0
