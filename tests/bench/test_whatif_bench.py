"""bench/whatif.py runs end to end on a tiny ladder and reports every row (never timings)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration


def test_whatif_bench_reports_requests_and_stages() -> None:
    run = subprocess.run([sys.executable, str(REPO / "bench" / "whatif.py"), "--players", "30", "--rounds", "2",
                          "--repeat", "2", "--explain", "1"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "what-if of a 30-player round" in out
    requests = [line for line in out.splitlines() if line.startswith("| 0 |") or line.startswith("| 1 |")]
    assert len(requests) == 2
    for line in requests:  # the API process's CPU per request: mean (min / max), a number each
        mean, spread = line.split("|")[4].strip().split(" ", 1)
        mean = mean.strip("*")
        assert float(mean) >= 0 and spread.startswith("(") and spread.endswith(")")
    stages = [line.split("|")[1].strip() for line in out.splitlines() if line.startswith("| ") and "ms" not in line
              and not line.startswith("| 0 |") and not line.startswith("| 1 |")]
    assert stages == ["parse", "redis read", "rate", "answer", "json", "total"]
