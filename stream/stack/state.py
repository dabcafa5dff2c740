"""The state file of a running ``stream stack`` (its pid and addresses): written and removed here, read by
:func:`stream.settings.running_stack_env` (commands find the stack when KAFKA_BOOTSTRAP / REDIS_URL are unset).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any


def write_state(path: Path, env: dict[str, str], **extra: Any) -> None:
    """Record this process as the running stack: ``{"pid", "started_at", "env", **extra}``, renamed into place
    (a reader never sees half a file), mode 0600 (the Redis URL may carry a password)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    payload = {"pid": os.getpid(), "started_at": time.time(), "env": env, **extra}
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(payload, out, indent=2)
    os.replace(tmp, path)


def remove_state(path: Path) -> None:
    """Remove the state file if it is still this process's (another stack may have replaced it)."""
    try:
        if json.loads(path.read_text()).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError):
        pass
