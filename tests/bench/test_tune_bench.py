"""bench/tune.py runs end to end on a tiny history: the three rows, held-out figures and a verdict."""

from __future__ import annotations

import re

import pytest

from tests.bench.test_benches import run_bench

pytestmark = pytest.mark.integration


def test_tune_bench_scores_tuned_defaults_and_the_paper_preset() -> None:
    out = run_bench("tune.py", "--quick", "--jobs", "1")
    rows = [line.strip("|").split("|") for line in out.splitlines() if line.startswith("| mmr") or line.startswith("| paper")]
    assert [cells[0].strip() for cells in rows] == ["mmr tuned", "mmr defaults", "paper-codeforces"]
    for cells in rows:
        assert 0.0 <= float(cells[3]) <= 100.0  # held-out pair_all
    assert float(rows[0][2]) >= float(rows[1][2])  # tuning objective: tuned >= defaults
    verdict = next(line for line in out.splitlines() if line.startswith("target"))
    match = re.search(r"\(all ([-+][0-9.]+), experienced ([-+][0-9.]+) points\)", verdict)
    assert match is not None, verdict
    gain_all, gain_exp = float(match[1]), float(match[2])
    assert gain_all == pytest.approx(float(rows[0][3]) - float(rows[2][3]), abs=2e-3)
    assert (": MET" in verdict) == (gain_all > 0 and gain_exp > 0)
