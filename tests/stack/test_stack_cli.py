"""``stream stack`` (no demo) as a real subprocess: state file, topics, env fallback, clean Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from stream.settings import Settings, running_stack_env
from stream.stack.topics import ensure_topics

pytestmark = pytest.mark.integration

#: Generous bounds for start-up and shutdown of the subprocess (not performance assertions).
START_DEADLINE_S = 60.0
STOP_DEADLINE_S = 30.0


def test_stack_command_runs_records_its_addresses_and_cleans_up(tmp_path: Path) -> None:
    state_file = tmp_path / "stack.json"
    env = {**os.environ, "STACK_STATE_FILE": str(state_file), "PARTITIONS": "3"}
    env.pop("KAFKA_BOOTSTRAP", None)
    env.pop("REDIS_URL", None)
    env.pop("TOPIC_PREFIX", None)
    proc = subprocess.Popen([sys.executable, "-m", "stream", "stack"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + START_DEADLINE_S
        while not state_file.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert state_file.exists(), proc.stdout.read().decode() if proc.poll() is not None else "no state file"
        state = json.loads(state_file.read_text())
        assert state["pid"] == proc.pid

        # Another command with KAFKA_BOOTSTRAP / REDIS_URL unset finds the stack through the state file.
        lookup_env = {"STACK_STATE_FILE": str(state_file)}
        found = running_stack_env(lookup_env)
        assert found == state["env"]
        assert Settings.from_env(environ={**found}).kafka_bootstrap == found["KAFKA_BOOTSTRAP"]
        assert redis.Redis.from_url(found["REDIS_URL"]).ping()
        # The service topics exist with PARTITIONS partitions (ensure_topics leaves them as they are).
        assert ensure_topics(found["KAFKA_BOOTSTRAP"], {"rounds": 1, "rating-changes": 1}) == {"rounds": 3, "rating-changes": 3}
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=STOP_DEADLINE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
    text = out.decode()
    assert proc.returncode == 0, text
    assert f"export KAFKA_BOOTSTRAP={state['env']['KAFKA_BOOTSTRAP']}" in text
    assert not state_file.exists()
    assert running_stack_env({"STACK_STATE_FILE": str(state_file)}) == {}
    with pytest.raises(redis.ConnectionError):
        redis.Redis.from_url(state["env"]["REDIS_URL"], socket_connect_timeout=1).ping()


def test_stale_state_file_is_ignored(tmp_path: Path) -> None:
    state_file = tmp_path / "stack.json"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    state_file.write_text(json.dumps({"pid": dead.pid, "env": {"KAFKA_BOOTSTRAP": "127.0.0.1:1"}}))
    assert running_stack_env({"STACK_STATE_FILE": str(state_file)}) == {}
    state_file.write_text(json.dumps({"pid": os.getpid(), "env": {"KAFKA_BOOTSTRAP": "127.0.0.1:1", "OTHER": "x"}}))
    assert running_stack_env({"STACK_STATE_FILE": str(state_file)}) == {"KAFKA_BOOTSTRAP": "127.0.0.1:1"}
