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

from stream.settings import Settings, StackChoiceError, running_stack_env
from stream.pipeline.topics import ensure_topics

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

    proc, state = start_stack(tmp_path / "stack.json", "--demo", "--demo-rate", "20", "--demo-rounds", "30",
                              "--web-port", str(free_port()))
    rated = 0
    try:
        deadline = time.monotonic() + START_DEADLINE_S
        client = redis.Redis.from_url(state["env"]["REDIS_URL"])
        while rated < 30 and time.monotonic() < deadline:
            rated = int(client.hget(keys.ladder("default"), "rounds_rated") or 0)
            time.sleep(0.5)
        client.close()
        time.sleep(2)  # the stack's watch loop notices and says so
    finally:
        text = stop_stack(proc, group=True)  # what a terminal's Ctrl-C does
    assert rated == 30, text
    assert proc.returncode == 0, text
    # says when the demo stream is over, and that it was rated; a command that runs (not on PATH here)
    assert "demo stream finished: 30 rounds published" in text and "all 30 demo rounds are rated" in text, text
    assert f"{Path(sys.executable).parent / 'stream'} tail" in text or "  live changes   stream tail" in text
    worker_log = Path(state["logs"]) / "worker.log"
    errors = [line for line in worker_log.read_text().splitlines() if "[ERROR]" in line]
    assert errors == [], errors[:5]
    with pytest.raises(redis.ConnectionError):
        redis.Redis.from_url(state["env"]["REDIS_URL"], socket_connect_timeout=1).ping()


def test_running_stack_env_finds_the_only_stack_or_asks_which(tmp_path: Path) -> None:
    stacks = tmp_path / "elo-mmr-stream" / "stacks"
    stacks.mkdir(parents=True)
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (stacks / "old.json").write_text(json.dumps({"pid": dead.pid, "name": "old", "env": {"REDIS_URL": "redis://x:1"}}))
    assert running_stack_env(env) == {}
    (stacks / "a.json").write_text(json.dumps({"pid": os.getpid(), "name": "a", "env": {"REDIS_URL": "redis://a:1"}}))
    assert running_stack_env(env) == {"REDIS_URL": "redis://a:1"}  # the only live one
    (stacks / "b.json").write_text(json.dumps({"pid": os.getpid(), "name": "b", "env": {"REDIS_URL": "redis://b:1"}}))
    with pytest.raises(StackChoiceError, match=r"2 embedded stacks are running \(a, b\): set STACK_NAME"):
        running_stack_env(env)
    assert running_stack_env({**env, "STACK_NAME": "b"}) == {"REDIS_URL": "redis://b:1"}
    with pytest.raises(StackChoiceError, match=r"STACK_NAME='old' names no running embedded stack; running: a, b"):
        running_stack_env({**env, "STACK_NAME": "old"})  # a stale (or misspelt) name is an error, not the default


def test_two_stacks_side_by_side_each_with_its_own_state_and_logs(tmp_path: Path) -> None:
    """Two `stream stack --name` on one account: two state files and log folders; a command asks
    which one to use (or takes STACK_NAME); stopping one leaves the other's state alone."""
    cache = tmp_path / "cache"
    stacks = cache / "elo-mmr-stream" / "stacks"
    base = {k: v for k, v in os.environ.items() if k not in ("KAFKA_BOOTSTRAP", "REDIS_URL", "TOPIC_PREFIX",
                                                               "STACK_STATE_FILE", "STACK_NAME")}
    base["XDG_CACHE_HOME"] = str(cache)
    procs = []
    try:
        for name in ("one", "two"):
            procs.append(subprocess.Popen([sys.executable, "-m", "stream", "stack", "--name", name], env=base,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True))
        deadline = time.monotonic() + START_DEADLINE_S
        while not all((stacks / f"{n}.json").exists() for n in ("one", "two")) and time.monotonic() < deadline:
            time.sleep(0.2)
        states = {n: json.loads((stacks / f"{n}.json").read_text()) for n in ("one", "two")}
        assert states["one"]["env"] != states["two"]["env"]
        assert [Path(states[n]["logs"]) for n in ("one", "two")] == [stacks / "one-logs", stacks / "two-logs"]

        def leaderboard(**extra: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, "-m", "stream", "leaderboard", "nope"], env={**base, **extra},
                                  capture_output=True, text=True, timeout=60)

        ask = leaderboard()
        assert ask.returncode == 2 and "2 embedded stacks are running (one, two): set STACK_NAME" in ask.stderr
        redis.Redis.from_url(states["two"]["env"]["REDIS_URL"]).sadd("ems:ladders", "nope")
        assert leaderboard(STACK_NAME="one").returncode == 1  # stack one's Redis: no such ladder
        assert leaderboard(STACK_NAME="two").returncode == 0  # stack two's Redis has it
        again = subprocess.run([sys.executable, "-m", "stream", "stack", "--name", "one"], env=base,
                               capture_output=True, text=True, timeout=60)
        assert again.returncode == 2 and "already running" in again.stderr

        out = stop_stack(procs[0], group=True)
        assert procs[0].returncode == 0, out
        assert not (stacks / "one.json").exists() and (stacks / "two.json").exists()
        assert "STACK_NAME" not in leaderboard().stderr  # one left: found without asking
    finally:
        for proc in procs:
            if proc.poll() is None:
                stop_stack(proc, group=True)
