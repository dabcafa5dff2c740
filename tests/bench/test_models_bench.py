"""bench/models.py runs end to end on tiny inputs: one row per model, and every model with an
oracle computed the same ratings as the authors' system (the check column, not the timings)."""

from __future__ import annotations

import pytest

from stream.engine.models import MODELS
from tests.bench.test_benches import run_bench

pytestmark = pytest.mark.integration

BENCHED = [name for name in MODELS if name != "trueskill"]  # bench/models.py's (TrueSkill: bench/teams.py)


def test_models_bench_reports_every_model_next_to_its_reference() -> None:
    out = run_bench("models.py", "--quick")
    history = [line.strip("|").split("|") for line in out.splitlines() if line.startswith("| ") and "rounds/s" in line]
    assert [cells[0].strip() for cells in history] == BENCHED
    for cells in history:
        model = MODELS[cells[0].strip()]
        if model.oracle is None:
            assert cells[3].strip() == "—"
        else:
            assert cells[1].strip() == model.oracle
            assert float(cells[5]) < 0.01  # max |mu - reference|
    single = [line for line in out.splitlines() if line.startswith("| 300 |")]
    assert len(single) == len(BENCHED)
