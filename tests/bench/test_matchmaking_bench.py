"""bench/matchmaking.py runs end to end on small pools and reports every shape and matcher."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_matchmaking_bench_reports_every_shape_next_to_its_baselines() -> None:
    run = subprocess.run([sys.executable, str(REPO / "bench" / "matchmaking.py"), "--sizes", "200,400", "--repeat", "1"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    rows = [line.split() for line in run.stdout.splitlines() if line.split()[:1] in (["duel"], ["5v5"], ["ffa8"], ["ffa64"])]
    seen = {(r[0], int(r[1]), r[2]) for r in rows}
    for shape in ("duel", "5v5", "ffa8", "ffa64"):
        for size in (200, 400):
            assert {(shape, size, "ours"), (shape, size, "window")} <= seen
    assert {("duel", 200, "all-pairs"), ("duel", 400, "all-pairs")} <= seen
    for r in rows:
        matches, quality = int(r[-2]), float(r[-1])
        if r[0] != "ffa64" or int(r[1]) >= 400:
            assert matches > 0 and 0.0 < quality <= 1.0
