"""bench/broker_growth.py runs end to end on a tiny input and reports every chunk (never asserts timings)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration


def test_broker_growth_reports_each_chunk_against_the_first() -> None:
    run = subprocess.run([sys.executable, str(REPO / "bench" / "broker_growth.py"), "--chunks", "3", "--chunk", "200"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    rows = [line.strip("|").split("|") for line in run.stdout.splitlines() if line.startswith("| ") and "x |" in line]
    assert [int(cells[0].replace(",", "")) for cells in rows] == [200, 400, 600]  # log size after each chunk
    assert rows[0][3].strip() == "1.0x" and all(float(cells[2]) >= 0 for cells in rows)
