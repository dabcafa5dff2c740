"""bench/lines.py: the accounting of stream/'s lines against a base commit runs and adds up."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_lines_counts_every_package_and_the_totals_add_up() -> None:
    run = subprocess.run([sys.executable, str(REPO / "bench" / "lines.py"), "--base", "83879f4", "--grown", "3"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert out.startswith("stream/: 21,657 lines at 83879f4, ")
    now = sum(p.read_bytes().count(b"\n") for p in (REPO / "stream").rglob("*.py"))
    assert f", {now:,} now (working tree)" in out.splitlines()[0]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in out.splitlines()
            if line.startswith("| stream/") and line.count("|") == 7]
    total = next(line for line in out.splitlines() if line.startswith("| **total** |"))
    cells = [int(c.strip().replace(",", "")) for c in total.strip("|").split("|")[1:]]
    assert [sum(int(r[i].replace(",", "")) for r in rows) for i in range(1, 6)] == cells
    assert cells[0] == 21_657 and cells[1] == now
    assert re.search(r"^\| matchmaking \| \d+ \| [\d,]+ \|$", out, re.M)
    assert "| stream/matchmaking/tick.py | matchmaking |" in out
