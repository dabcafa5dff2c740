"""The benchmarks under bench/ run end to end on tiny inputs and report what they moved (never timings)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration


def run_bench(script: str, *args: str) -> str:
    """The standard output of ``python bench/<script> <args>``, which must exit 0."""
    run = subprocess.run([sys.executable, str(REPO / "bench" / script), *args], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_floor_bench_moves_every_mandated_message_and_reports_ratios() -> None:
    out = run_bench("floor.py", "--sizes", "10", "--rounds", "3")
    row = next(line for line in out.splitlines() if line.startswith("| 10 |"))
    cells = [cell.strip().strip("*") for cell in row.strip("|").split("|")]
    size, rounds, participations, messages = (int(c.replace(",", "")) for c in cells[:4])
    assert (size, rounds, participations) == (10, 3, 30)
    # per round: the round itself, one fan-out per partition holding some of its 10 players (1 to 4), 10 events
    assert 3 + 3 + 30 <= messages <= 3 + 12 + 30
    figures = [float(c.rstrip("x")) for c in cells[4:]]  # confluent_kafka is in the test extra: no "nan"
    assert all(value >= 0 for value in figures) and figures[-1] > 0


def test_broker_growth_reports_each_chunk_against_the_first() -> None:
    out = run_bench("broker_growth.py", "--chunks", "3", "--chunk", "200")
    rows = [line.strip("|").split("|") for line in out.splitlines() if line.startswith("| ") and "x |" in line]
    assert [int(cells[0].replace(",", "")) for cells in rows] == [200, 400, 600]  # log size after each chunk
    assert rows[0][3].strip() == "1.0x" and all(float(cells[2]) >= 0 for cells in rows)


def test_engine_bench_reports_every_part_against_its_reference() -> None:
    out = run_bench("engine.py", "--quick")
    assert "(a) synthetic" in out and "single round n=2,000" in out
    history = [line for line in out.splitlines() if line.startswith("  | paper-codeforces |") or line.startswith("  | mmr |")]
    assert len(history) == 2
    for line in history:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert float(cells[3].rstrip("x")) > 0 and 0 < float(cells[4]) <= 100  # speed ratio, pair-exp
    matches = [line for line in out.splitlines() if line.startswith("  | 2 |") or line.startswith("  | 10 |")]
    assert len(matches) == 2 and all(float(line.strip().strip("|").split("|")[-1].strip().rstrip("x")) > 0
                                     for line in matches)
