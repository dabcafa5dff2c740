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


def test_matchmaking_bench_service_row_forms_the_same_matches_from_redis() -> None:
    """--service: the pool joined to a private redis-server and read back as columns is matched as
    in memory (every duel pairs up; 5v5 lobbies form), read in full and through the worker's copy
    (1 % of the pool replaced by new players between ticks: every duel still pairs up)."""
    run = subprocess.run([sys.executable, str(REPO / "bench" / "matchmaking.py"), "--sizes", "300", "--repeat", "1",
                          "--shapes", "duel,5v5", "--service"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    rows = {(r[0], r[2]): r for r in (line.split() for line in run.stdout.splitlines()) if r[:1] in (["duel"], ["5v5"])}
    assert int(rows[("duel", "service")][-1]) == int(rows[("duel", "ours")][-2]) == 150
    assert int(rows[("5v5", "service")][-1]) > 0
    assert int(rows[("duel", "service+")][-1]) == 150 and int(rows[("5v5", "service+")][-1]) > 0
