"""tests/queues (matchmaking in the service) reuse the pipeline and fault harnesses (real workers,
real broker and Redis)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for path in (HERE, HERE.parent / "stream", HERE.parent / "faults", HERE.parent / "api"):
    sys.path.insert(0, str(path))
