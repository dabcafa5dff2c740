"""``stream stack`` as a real subprocess: state file, topics, env fallback, clean Ctrl-C, and the demo (rated rounds, clean stop)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from stream.settings import Settings, running_stack_env
from stream.stack.topics import ensure_topics

pytestmark = pytest.mark.integration

#: Generous bounds for start-up and shutdown of the subprocess (not performance assertions).
START_DEADLINE_S = 60.0
STOP_DEADLINE_S = 30.0


def start_stack(state_file: Path, *args: str, **env_extra: str) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    """``stream stack <args>`` in its own process group, with no Kafka/Redis in its environment;
    returns once its state file exists (the process and the state)."""
    env = {**os.environ, "STACK_STATE_FILE": str(state_file), **env_extra}
    for name in ("KAFKA_BOOTSTRAP", "REDIS_URL", "TOPIC_PREFIX"):
        env.pop(name, None)
    proc = subprocess.Popen([sys.executable, "-m", "stream", "stack", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + START_DEADLINE_S
    while not state_file.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    if not state_file.exists():
        stop_stack(proc, group=True)
        raise AssertionError(proc.stdout.read().decode() if proc.stdout else "no state file")
    return proc, json.loads(state_file.read_text())


def stop_stack(proc: subprocess.Popen[bytes], *, group: bool) -> str:
    """SIGINT to the process (``group``: to its whole process group, as a terminal's Ctrl-C);
    its output once it has exited (SIGKILL to the group after STOP_DEADLINE_S)."""
    if group:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=STOP_DEADLINE_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
    return out.decode()


def test_stack_command_runs_records_its_addresses_and_cleans_up(tmp_path: Path) -> None:
    state_file = tmp_path / "stack.json"
    proc, state = start_stack(state_file, PARTITIONS="3")
    try:
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
        text = stop_stack(proc, group=False)
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


def test_demo_rates_rounds_and_a_terminal_ctrl_c_stops_it_cleanly(tmp_path: Path) -> None:
    """Ctrl-C in a terminal signals the whole foreground process group: the services run in their
    own sessions, so only ``stream stack`` gets it and stops the worker before the broker and
    Redis it uses (no connection errors while the worker shuts down), then exits 0."""
    from stream.stack.ports import free_port
    from stream.store import keys

    proc, state = start_stack(tmp_path / "stack.json", "--demo", "--demo-rate", "20", "--web-port", str(free_port()))
    rated = 0
    try:
        deadline = time.monotonic() + START_DEADLINE_S
        client = redis.Redis.from_url(state["env"]["REDIS_URL"])
        while rated < 5 and time.monotonic() < deadline:
            rated = int(client.hget(keys.ladder("default"), "rounds_rated") or 0)
            time.sleep(0.5)
        client.close()
    finally:
        text = stop_stack(proc, group=True)  # what a terminal's Ctrl-C does
    assert rated >= 5, text
    assert proc.returncode == 0, text
    worker_log = Path(state["logs"]) / "worker.log"
    errors = [line for line in worker_log.read_text().splitlines() if "[ERROR]" in line]
    assert errors == [], errors[:5]
    with pytest.raises(redis.ConnectionError):
        redis.Redis.from_url(state["env"]["REDIS_URL"], socket_connect_timeout=1).ping()
