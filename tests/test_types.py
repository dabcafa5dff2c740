"""mypy --strict (pyproject's [tool.mypy]) holds for the whole package: engine, contracts, batch tools,
store, pipeline, stack, read API, CLI and settings.

Where a third-party API is untyped (Faust's decorators and stream interface, kafka-python) the code
says so at the boundary (a cast or an ``ignore[code]`` with the reason), never by loosening the
config."""

from __future__ import annotations

from pathlib import Path

from mypy import api

REPO = Path(__file__).resolve().parents[1]
CHECKED = ["stream"]


def test_the_package_passes_mypy_strict() -> None:
    stdout, stderr, status = api.run(["--config-file", str(REPO / "pyproject.toml"), *(str(REPO / p) for p in CHECKED)])
    assert status == 0, stdout + stderr
