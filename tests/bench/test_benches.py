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


def test_handlers_bench_compares_phase_two_with_and_without_its_check() -> None:
    out = run_bench("handlers.py", "--size", "10", "--rounds", "5", "--pool", "30", "--compare-verify", "--repeat", "1")
    rows = {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("| handlers: ")}
    assert set(rows) == {"handlers: wall", "handlers: process CPU", "handlers: redis-server CPU"}
    for row in rows.values():
        off, on = (float(cell) for cell in row.split("|")[2:4])
        assert off > 0 and on > 0


def test_idle_bench_reports_cpu_and_first_round_latency() -> None:
    out = run_bench("idle.py", "--gap-s", "1", "--samples", "2")
    row = next(line for line in out.splitlines() if line.startswith("| this commit |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1].endswith("% of a core") and float(cells[1].split()[0]) >= 0
    p50, p99, worst = (float(cell.removesuffix(" ms")) for cell in cells[2:5])
    assert 0 < p50 <= p99 <= worst
