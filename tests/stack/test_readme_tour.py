"""Issue 29 item 1: the README's five-minute tour, run as written right after the Quick start's demo
(``stream stack --demo``, what ``scripts/run.sh`` runs once set up): every command exits 0."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_stack_cli import start_stack, stop_stack  # noqa: E402

from stream.stack.ports import free_port  # noqa: E402

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
#: Seconds one tour command may take (generous: a loaded machine; not a performance assertion).
COMMAND_TIMEOUT_S = 300


def tour_commands() -> list[list[str]]:
    """The tour's lines between the README's tour markers, comments dropped, split as a shell would."""
    block = re.search(r"<!-- tour:start -->\n```\n(.*?)```\n<!-- tour:end -->", (ROOT / "README.md").read_text(), re.S)
    assert block is not None, "README.md lost its tour markers"
    return [shlex.split(line, comments=True) for line in block.group(1).splitlines() if line.strip()]


def test_the_readme_tour_works_right_after_the_demo(tmp_path: Path) -> None:
    commands = tour_commands()
    assert [c[:2] for c in commands] == [[".venv/bin/stream", name] for name in
                                        ("generate-synthetic", "publish", "tail", "leaderboard", "replay")]
    cache = tmp_path / "cache"
    proc, _ = start_stack(cache / "elo-mmr-stream" / "stacks" / "demo.json", "--demo", "--name", "demo",
                          "--web-port", str(free_port()), STACK_STATE_FILE="", XDG_CACHE_HOME=str(cache))
    env = {key: value for key, value in os.environ.items()
           if key not in ("KAFKA_BOOTSTRAP", "REDIS_URL", "TOPIC_PREFIX", "STACK_NAME", "STACK_STATE_FILE")}
    env["XDG_CACHE_HOME"] = str(cache)  # the user's shell: finds the demo's stack by itself
    outputs = []
    try:
        for command in commands:
            args = [sys.executable, "-m", "stream", *command[1:]]  # .venv/bin/stream, this interpreter
            done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True,
                                  timeout=COMMAND_TIMEOUT_S)
            outputs.append(done.stdout + done.stderr)
            assert done.returncode == 0, (command, done.stdout, done.stderr)
    finally:
        stop_stack(proc, group=True)
    published, tailed, board = outputs[1], outputs[2], outputs[3]
    assert "outcomes: 20 rated" in published, published
    assert len([line for line in tailed.splitlines() if line.startswith("tour ")]) == 5, tailed
    assert "conflict" not in published
    rows = (tmp_path / "ratings.csv").read_text().splitlines()
    assert rows[0].startswith("ladder,") and len(rows) > 1 and all(row.startswith("tour,") for row in rows[1:])
    assert len(board.strip().splitlines()) >= 10, board
