"""Issue 29 items 2, 3, 4, 8, 11 and issue 28 item 6: connection settings checked at start-up (one line,
exit 2), which Kafka / Redis a command uses said when not from the environment, no write to a server
nobody chose, an unreachable server one line and exit 4, a taken port one line and exit 2, and the
offline commands usable with several stacks running."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stream.cli.main import app
from stream.settings import Settings, SettingsError, connection_origin

REDIS_ACCEPTS = ("redis://[user:password@]host[:port][/db] (db a whole number >= 0), rediss://... (TLS) "
                 "or unix:///path/to/socket, with query parameters among db, socket_timeout, socket_connect_timeout, "
                 "timeout, health_check_interval, max_connections, socket_read_size, protocol, socket_keepalive, "
                 "retry_on_timeout, username, password, client_name (rediss:// also ssl_cert_reqs, ssl_check_hostname, "
                 "ssl_ca_certs, ssl_certfile, ssl_keyfile, ssl_min_version)")
FILE_ACCEPTS = "the path of a readable file, or empty (none)"
KAFKA_ACCEPTS = "host:port[,host:port...] with ports from 1 to 65535 ([address]:port for IPv6)"
ROUND = {"round_id": "r1", "ladder": "l", "occurred_at": "2026-01-01T00:00:00Z",
         "standings": [{"player": "a", "rank": 1}, {"player": "b", "rank": 2}]}


@pytest.fixture()
def rounds(tmp_path: Path) -> Path:
    path = tmp_path / "rounds.jsonl"
    path.write_text(json.dumps(ROUND) + "\n")
    return path


@pytest.fixture()
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No connection setting in the environment and a stack directory of this test only."""
    for name in ("KAFKA_BOOTSTRAP", "REDIS_URL", "STACK_NAME", "STACK_STATE_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    stacks = tmp_path / "cache" / "elo-mmr-stream" / "stacks"
    stacks.mkdir(parents=True)
    return stacks


def fake_stack(stacks: Path, name: str, kafka: str = "127.0.0.1:1", redis: str = "redis://127.0.0.1:1/0") -> None:
    """A state file of a 'running' stack (this process's pid is alive)."""
    (stacks / f"{name}.json").write_text(json.dumps({"pid": os.getpid(), "name": name,
                                                     "env": {"KAFKA_BOOTSTRAP": kafka, "REDIS_URL": redis}}))


@pytest.mark.parametrize(("name", "raw", "accepts"), [
    ("REDIS_URL", "notaurl", REDIS_ACCEPTS),
    ("REDIS_URL", "http://127.0.0.1:6379/0", REDIS_ACCEPTS),
    ("REDIS_URL", "redis://127.0.0.1:99999/0", REDIS_ACCEPTS),
    ("REDIS_URL", "redis://127.0.0.1:6379/zero", REDIS_ACCEPTS),
    ("REDIS_URL", "redis://127.0.0.1:6379/-1", REDIS_ACCEPTS),
    # what redis-py itself raised on (a traceback) or silently changed (port 0: 6379; no host: localhost)
    ("REDIS_URL", "redis://127.0.0.1:6379/0?socket_timeout=abc", REDIS_ACCEPTS),
    ("REDIS_URL", "redis://127.0.0.1:6379/0?db=x", REDIS_ACCEPTS),
    ("REDIS_URL", "redis://127.0.0.1:6379/0?health_check_interval=-1", REDIS_ACCEPTS),
    ("REDIS_URL", "redis://127.0.0.1:6379/0?protocol=4", REDIS_ACCEPTS),
    ("REDIS_URL", "redis://127.0.0.1:6379/0?ssl_cert_reqs=required", REDIS_ACCEPTS),
    ("REDIS_URL", "rediss://127.0.0.1:6379/0?ssl_cert_reqs=bogus", REDIS_ACCEPTS),
    ("REDIS_URL", "redis://127.0.0.1:6379/0?colour=blue", REDIS_ACCEPTS),
    ("REDIS_URL", "redis://127.0.0.1:0/0", REDIS_ACCEPTS),
    ("REDIS_URL", "redis://:6379/0", REDIS_ACCEPTS),
    ("REDIS_URL", "redis://cache host:6379/0", REDIS_ACCEPTS),
    ("REDIS_URL", "redis://[::1/0", REDIS_ACCEPTS),
    ("REDIS_TLS_CA", "/no/such/ca.pem", FILE_ACCEPTS),
    ("KAFKA_SSL_KEYFILE", "/no/such/key.pem", FILE_ACCEPTS),
    ("KAFKA_BOOTSTRAP", "::::", KAFKA_ACCEPTS),
    ("KAFKA_BOOTSTRAP", "broker", KAFKA_ACCEPTS),
    ("KAFKA_BOOTSTRAP", "broker:0", KAFKA_ACCEPTS),
    ("KAFKA_BOOTSTRAP", "kafka://broker:9092", KAFKA_ACCEPTS),
    ("KAFKA_BOOTSTRAP", "", KAFKA_ACCEPTS),
])
def test_a_malformed_connection_string_is_one_problem_naming_it(name: str, raw: str, accepts: str) -> None:
    with pytest.raises(SettingsError) as info:
        Settings.from_env({name: raw})
    assert info.value.problems == (f"{name}={raw!r}: expected {accepts}",)


@pytest.mark.parametrize("raw", ["redis://127.0.0.1:6379/0?socket_timeout=abc", "redis://127.0.0.1:0/0",
                                 "rediss://h:6379/0?ssl_cert_reqs=bogus", "redis://user@:6379/0"])
def test_the_worker_refuses_a_redis_url_that_redis_py_would_raise_on(raw: str, tmp_path: Path) -> None:
    """Through the real entry point: one line, exit 2, before connecting anything (redis-py raised a
    ValueError or TypeError with a traceback at the first command, or used another address)."""
    env = {**os.environ, "REDIS_URL": raw, "KAFKA_BOOTSTRAP": "127.0.0.1:1", "XDG_CACHE_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "stream", "worker", "--no-web"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: configuration: REDIS_URL=") and done.stderr.rstrip().endswith(REDIS_ACCEPTS)


@pytest.mark.parametrize(("name", "raw"), [
    ("REDIS_URL", "redis://127.0.0.1:6379/15"), ("REDIS_URL", "rediss://user:pw@cache.example:6380/0"),
    ("REDIS_URL", "unix:///run/redis.sock"), ("REDIS_URL", "redis://localhost"),
    ("REDIS_URL", "redis://h:6379/0?socket_timeout=1.5&client_name=w1&protocol=3&health_check_interval=0"),
    ("REDIS_URL", "rediss://h:6380/0?ssl_cert_reqs=optional&ssl_check_hostname=false"),
    ("REDIS_URL", "redis://u@h:6379?db=2"), ("REDIS_TLS_CA", ""), ("REDIS_TLS_CA", __file__),
    ("KAFKA_BOOTSTRAP", "a:9092, b:9093"), ("KAFKA_BOOTSTRAP", "[::1]:9092"),
])
def test_well_formed_connection_strings_are_accepted(name: str, raw: str) -> None:
    assert getattr(Settings.from_env({name: raw}), name.lower()) == raw


def test_a_bad_redis_url_with_credentials_is_shown_masked() -> None:
    with pytest.raises(SettingsError) as info:
        Settings.from_env({"REDIS_URL": "http://user:hunter2@host:6379/0"})
    assert "hunter2" not in info.value.problems[0] and info.value.problems[0].startswith("REDIS_URL='http://***@host")


COMMANDS = [["worker", "--no-web"], ["api"], ["tail"], ["rejected"], ["leaderboard", "l"], ["player", "l", "p"],
            ["round", "l", "r"], ["backfill", "{rounds}"], ["import", "{rounds}"], ["erase", "l", "p"],
            ["void", "l", "r"], ["publish", "{rounds}"], ["export", "l", "--output", "{out}"]]


@pytest.mark.parametrize("bad", [{"REDIS_URL": "notaurl"}, {"REDIS_URL": "http://127.0.0.1:6379/0"},
                                 {"KAFKA_BOOTSTRAP": "::::"}])
def test_every_connected_command_refuses_a_malformed_connection_string(
        bad: dict[str, str], rounds: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One line naming the setting, its value and what is allowed; exit 2; no traceback."""
    monkeypatch.setenv("ERASURE_SECRET", "s")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("KAFKA_BOOTSTRAP", "127.0.0.1:1")
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
    for name, value in bad.items():
        monkeypatch.setenv(name, value)
    (name, value), = bad.items()
    for command in COMMANDS:
        args = [a.format(rounds=rounds, out=tmp_path / "out.jsonl") for a in command]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        lines = result.output.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: configuration: {name}={value!r}: expected "), (args, lines)


def test_the_worker_with_a_malformed_redis_url_exits_2_at_once(tmp_path: Path) -> None:
    """It used to start and hang; now the real entry point stops before connecting anything."""
    env = {**os.environ, "REDIS_URL": "notaurl", "KAFKA_BOOTSTRAP": "127.0.0.1:1", "XDG_CACHE_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "stream", "worker", "--no-web"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"error: configuration: REDIS_URL='notaurl': expected {REDIS_ACCEPTS}"]


def _closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(("command", "server"), [
    (["worker", "--no-web"], "Kafka"), (["tail"], "Kafka"), (["rejected"], "Kafka"), (["publish", "{rounds}"], "Kafka"),
    (["void", "l", "r"], "Kafka"), (["leaderboard", "l"], "Redis"),
    (["backfill", "{rounds}"], "Redis"), (["erase", "l", "p"], "Redis"),
])
def test_an_unreachable_server_is_one_line_naming_it_and_exit_4(
        command: list[str], server: str, rounds: Path, clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kafka, redis_ = f"127.0.0.1:{_closed_port()}", f"redis://127.0.0.1:{_closed_port()}/0"
    monkeypatch.setenv("KAFKA_BOOTSTRAP", kafka)
    monkeypatch.setenv("REDIS_URL", redis_)
    monkeypatch.setenv("ERASURE_SECRET", "s")
    args = [a.format(rounds=rounds, port=_closed_port()) for a in command]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 4, (args, result.output)
    lines = result.output.splitlines()
    assert len(lines) == 1, lines
    address = kafka if server == "Kafka" else redis_
    assert lines[0].startswith("error: ") and address in lines[0] and "refused" in lines[0].lower(), lines
    assert ("KAFKA_BOOTSTRAP" if server == "Kafka" else "REDIS_URL") in lines[0]


def test_a_database_the_redis_server_lacks_is_a_configuration_error(redis_url: str, clean_env: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    base = redis_url.rsplit("/", 1)[0]
    monkeypatch.setenv("REDIS_URL", f"{base}/99")
    result = CliRunner().invoke(app, ["leaderboard", "l"])
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: configuration: REDIS_URL='{base}/99'"), lines
    assert "0 to 15" in lines[0]


@pytest.mark.parametrize("command", [["backfill", "{rounds}"], ["import", "{empty}"], ["erase", "l", "p"],
                                     ["publish", "{rounds}"], ["void", "l", "r"]])
def test_no_write_to_a_server_nobody_chose(command: list[str], rounds: Path, clean_env: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither the environment nor a running stack names Kafka / Redis: a write is refused before
    anything connects (the default 127.0.0.1:6379 may be a system Redis)."""
    monkeypatch.setenv("ERASURE_SECRET", "s")
    empty = rounds.parent / "empty.jsonl"
    empty.write_text("")
    args = [a.format(rounds=rounds, empty=empty) for a in command]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, (args, result.output)
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: refusing to write to "), lines
    assert "is unset and no `stream stack` runs" in lines[0]


def test_a_stack_name_that_names_no_running_stack_is_an_error_listing_those_that_run(
        clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_stack(clean_env, "alpha")
    fake_stack(clean_env, "beta")
    monkeypatch.setenv("STACK_NAME", "alhpa")
    result = CliRunner().invoke(app, ["leaderboard", "l"])
    assert result.exit_code == 2, result.output
    assert result.output.splitlines() == [
        "error: configuration: STACK_NAME='alhpa' names no running embedded stack; running: alpha, beta"]


def test_a_command_says_which_stack_servers_it_uses(clean_env: Path) -> None:
    kafka, redis_ = f"127.0.0.1:{_closed_port()}", f"redis://127.0.0.1:{_closed_port()}/0"
    fake_stack(clean_env, "only", kafka=kafka, redis=redis_)
    assert connection_origin() == {"KAFKA_BOOTSTRAP": "stack only", "REDIS_URL": "stack only"}
    result = CliRunner().invoke(app, ["leaderboard", "l"])
    assert result.exit_code == 4, result.output
    note, error = result.output.splitlines()
    assert note == f"note: using Redis at {redis_} (from the running embedded stack only)"
    assert error.startswith(f"error: cannot use Redis at {redis_}") and "stack only" in error


def test_offline_commands_run_with_two_stacks_up(clean_env: Path, rounds: Path, tmp_path: Path) -> None:
    """replay, evaluate, tune and publish --dry-run touch neither Kafka nor Redis: no STACK_NAME needed."""
    fake_stack(clean_env, "alpha")
    fake_stack(clean_env, "beta")
    assert CliRunner().invoke(app, ["leaderboard", "l"]).exit_code == 2  # a connected command must choose
    many = tmp_path / "many.jsonl"
    many.write_text("".join(json.dumps({**ROUND, "round_id": f"r{i}", "occurred_at": f"2026-01-01T00:00:{i:02d}Z",
                                        "standings": [{"player": f"p{(i + k) % 5}", "rank": k + 1} for k in range(2)]})
                            + "\n" for i in range(40)))
    for command in (["replay", str(many), "--output", str(tmp_path / "out.csv")], ["evaluate", str(many)],
                    ["tune", str(many), "--model", "elo-multiplayer", "--budget", "2", "--jobs", "1"],
                    ["publish", str(many), "--dry-run", "--no-progress"]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 0, (command, result.output)
        assert "STACK_NAME" not in result.output


def test_a_taken_port_is_one_line_and_exit_2(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP", f"127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("REDIS_URL", f"redis://127.0.0.1:{_closed_port()}/0")
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        for command, where in ((["api", "--port", str(port)], "--host/--port"), (["worker"], "WEB_HOST:WEB_PORT")):
            monkeypatch.setenv("WEB_PORT", str(port))
            result = CliRunner().invoke(app, command)
            assert result.exit_code == 2, (command, result.output)
            lines = result.output.splitlines()
            assert len(lines) == 1 and lines[0].startswith(f"error: cannot listen on 127.0.0.1:{port} ({where})"), lines


def test_a_worker_whose_redis_is_unreachable_says_so_and_exits_4(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It used to start as if healthy (a warning 9 s later among framework logs): now one line at start-up."""
    redis_ = f"redis://127.0.0.1:{_closed_port()}/0"
    with socket.socket() as kafka:  # something listens where Kafka should be: the Redis check decides
        kafka.bind(("127.0.0.1", 0))
        kafka.listen(1)
        monkeypatch.setenv("KAFKA_BOOTSTRAP", f"127.0.0.1:{kafka.getsockname()[1]}")
        monkeypatch.setenv("REDIS_URL", redis_)
        result = CliRunner().invoke(app, ["worker", "--no-web"])
    assert result.exit_code == 4, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot use Redis at {redis_}: ") and "REDIS_URL" in lines[0]
