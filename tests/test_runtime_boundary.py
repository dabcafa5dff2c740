"""Faust at arm's length: only ``stream/pipeline/runtime/`` imports Faust, mode or aiokafka, and the
plain handlers never import the runtime package."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "stream"
RUNTIME = ROOT / "pipeline" / "runtime"
#: Top-level packages of the Faust runtime (mode is Faust's service library).
FRAMEWORK = {"faust", "mode", "aiokafka"}
#: Modules the runtime drives; they see messages, a context and an outbox, never Faust.
HANDLERS = ("phase_one.py", "phase_two.py", "rounds_batches.py", "updates_batches.py", "corrections_batches.py",
            "outbox.py", "context.py", "sweeper.py", "matchmaking.py")


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports, at any depth (function bodies and TYPE_CHECKING blocks too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def framework_imports(path: Path) -> set[str]:
    return {name for name in imported(path) if name.split(".")[0] in FRAMEWORK}


def test_only_the_runtime_imports_faust_or_aiokafka() -> None:
    offenders = {str(path.relative_to(ROOT.parent)): sorted(found) for path in ROOT.rglob("*.py")
                 if RUNTIME not in path.parents and (found := framework_imports(path))}
    assert offenders == {}


def test_the_runtime_does_import_them() -> None:
    """The scan finds what it looks for (else the test above would pass on a broken scan)."""
    assert "faust" in framework_imports(RUNTIME / "app.py")
    assert "aiokafka" in framework_imports(RUNTIME / "producer.py")


def test_handlers_do_not_import_the_runtime() -> None:
    offenders = {name: sorted(m for m in imported(ROOT / "pipeline" / name) if m.startswith("stream.pipeline.runtime"))
                 for name in HANDLERS}
    assert {name: found for name, found in offenders.items() if found} == {}
