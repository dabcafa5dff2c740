"""tests/faults reuse the pipeline harness of tests/stream (real workers, real broker and Redis)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stream"))
