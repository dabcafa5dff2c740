"""A fork server for the tests' worker processes: ``python -m stream worker`` in well under a second.

A worker's start spends seconds importing Faust, aiokafka, aiohttp, numpy and numba before it reads
a setting. The server (``python -m tests.stream.forkserver SOCKET``, one per test session, started
on first use) imports all of that once; each :func:`spawn` then forks it, and the child runs the
requested module (``stream``, or the fault suite's ``tests.faults.injection``) as ``__main__`` with
the test's argv, environment, working directory and log file, exactly as ``python -m MODULE ARGS``
would: the same entry point and code path, its own OS process (killable by pid: SIGTERM, SIGKILL),
its own interpreter exit (atexit, non-daemon threads, flushed output, exit status).

The child is the server's, not the test's: :class:`ForkedProcess` stands for it with the part of
``subprocess.Popen`` the tests use (pid, poll, wait, send_signal, terminate, kill, returncode); the
server reports the exit status on the request's connection and reaps the child only once the test
side has read it (or hung up), so the pid cannot be reused while the test may still signal it.

``WORKER_FORKSERVER=0`` in the test session's environment starts every worker with a plain
``subprocess.Popen`` instead (as does any platform without ``os.fork``).
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import runpy
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PRELOAD = ("stream.cli.main", "stream.cli.worker", "stream.cli.reach", "stream.pipeline.topics",
           "stream.pipeline.context", "stream.pipeline.runtime.app", "stream.pipeline.runtime.worker",
           "stream.api.server", "stream.pipeline.faults")
"""What ``stream worker`` imports before it runs (stream/cli/worker.py), and the fault seam."""
START_TIMEOUT_S = 120.0


def enabled() -> bool:
    return os.environ.get("WORKER_FORKSERVER", "1") != "0" and hasattr(os, "fork") and hasattr(socket, "AF_UNIX")


# --- the test side -------------------------------------------------------------------------------

class ForkedProcess:
    """A forked worker, seen from the test: the ``subprocess.Popen`` methods the harness calls."""

    def __init__(self, connection: socket.socket, pid: int, args: list[str]) -> None:
        self._connection = connection
        self.pid = pid
        self.args = args
        self.returncode: int | None = None

    def _read_status(self, timeout: float | None) -> int | None:
        if self.returncode is None:
            ready, _, _ = select.select([self._connection], [], [], timeout)
            if ready:
                line = self._connection.makefile("rb").readline()
                if not line:
                    raise RuntimeError(f"the fork server went away before worker {self.pid} exited")
                self.returncode = int(line)
                self._connection.close()  # the server reaps the child now
        return self.returncode

    def poll(self) -> int | None:
        return self._read_status(0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._read_status(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return code

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:  # a zombie until its status is read: never a reused pid
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class _Server:
    """The session's fork server process and its socket."""

    _lock = threading.Lock()
    _instance: "_Server | None" = None

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="ems-forkserver-")
        self.path = os.path.join(self.folder, "socket")
        self.log = open(os.path.join(self.folder, "server.log"), "wb")
        # stdin is a pipe from this process: the server ends (and kills what it forked) at its EOF
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        self.process = subprocess.Popen([sys.executable, "-m", "tests.stream.forkserver", self.path], cwd=REPO,
                                        env=env, stdin=subprocess.PIPE, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not os.path.exists(self.path):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the worker fork server did not start:\n{Path(self.log.name).read_text()}")
            time.sleep(0.05)
        atexit.register(self.close)

    @classmethod
    def get(cls) -> "_Server":
        with cls._lock:
            if cls._instance is None or cls._instance.process.poll() is not None:
                cls._instance = cls()
            return cls._instance

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()
        for name in ("socket", "server.log"):
            try:
                os.unlink(os.path.join(self.folder, name))
            except FileNotFoundError:
                pass
        os.rmdir(self.folder)


def spawn(module: str, args: list[str], env: dict[str, str], cwd: Path, log_path: Path) -> ForkedProcess:
    """``python -m MODULE ARGS`` with ``env`` in ``cwd``, stdout and stderr to ``log_path``: forked
    from the session's fork server."""
    server = _Server.get()
    log_path.write_bytes(b"")  # there from the start, as Popen's stdout file would be
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(server.path)
    request = {"module": module, "args": args, "env": env, "cwd": str(cwd), "log": str(log_path)}
    connection.sendall(json.dumps(request).encode() + b"\n")
    reply = b""
    while not reply.endswith(b"\n"):
        chunk = connection.recv(64)
        if not chunk:
            raise RuntimeError(f"the fork server did not start {module} {args}")
        reply += chunk
    return ForkedProcess(connection, int(reply), [sys.executable, "-m", module, *args])


# --- the server side -----------------------------------------------------------------------------

def _exit_code(pid: int) -> int | None:
    """The exit code of the exited child ``pid`` as Popen gives it (-N: killed by signal N), without
    reaping it; None while it runs."""
    result = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    if result is None or result.si_pid == 0:
        return None
    return result.si_status if result.si_code == os.CLD_EXITED else -result.si_status


def _serve(path: str) -> dict[str, Any]:
    """Accept requests until stdin closes; fork one child per request. Returns only in a child,
    with its request."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".tmp")
    listener.listen(64)
    os.rename(path + ".tmp", path)  # the test side waits for the path: it appears ready
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: dict[int, socket.socket] = {}  # pid -> its request's connection (status not yet read)
    reported: dict[int, socket.socket] = {}  # pid -> connection: status sent, reaped once it hangs up
    stdin = sys.stdin.fileno()
    while True:
        watched = [listener, wake_read, stdin, *reported.values()]
        ready, _, _ = select.select(watched, [], [], 1.0)
        if stdin in ready and not os.read(stdin, 4096):
            for pid in [*children, *reported]:
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                except ChildProcessError:
                    pass
            return {}
        if wake_read in ready:
            os.read(wake_read, 4096)
        for pid, connection in list(children.items()):
            code = _exit_code(pid)
            if code is not None:
                del children[pid]
                try:
                    connection.sendall(f"{code}\n".encode())
                except OSError:
                    pass
                reported[pid] = connection
        for pid, connection in list(reported.items()):
            if connection in ready:  # the test side read the status and hung up (or went away)
                del reported[pid]
                connection.close()
                os.waitpid(pid, 0)
        if listener in ready:
            connection, _ = listener.accept()
            request = json.loads(connection.makefile("rb").readline())
            pid = os.fork()
            if pid == 0:
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                for fd in (wake_read, wake_write):
                    os.close(fd)
                for other in (listener, connection, *children.values(), *reported.values()):
                    other.close()
                return dict(request)
            connection.sendall(f"{pid}\n".encode())
            children[pid] = connection


def _become(request: dict[str, Any]) -> None:
    """Turn this forked child into ``python -m MODULE ARGS`` as requested (never returns normally:
    the module's own exit ends the interpreter)."""
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    for source, target in ((null, 0), (log, 1), (log, 2)):
        os.dup2(source, target)
    os.close(log)
    os.close(null)
    # as a new interpreter would set them up for a file: block-buffered stdout (unbuffered with
    # PYTHONUNBUFFERED), line-buffered stderr
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", buffering=1 if unbuffered else -1, closefd=False, errors="backslashreplace")
    sys.stdout.reconfigure(write_through=unbuffered)
    sys.stderr = open(2, "w", buffering=1, closefd=False, errors="backslashreplace")
    sys.argv = [request["module"], *request["args"]]
    sys.path[0] = request["cwd"]
    runpy._run_module_as_main(request["module"])  # type: ignore[attr-defined]  # what `python -m` calls


def _warm_engine() -> None:
    """Load the engine's compiled kernels (numba, cached on disk; compiled here on a fresh clone)
    by rating three small rounds, so that no child loads or compiles them again."""
    from stream import engine
    from stream.batch.replay import replay
    from stream.contracts import Limits, parse_round

    rounds = [parse_round(json.dumps({"round_id": f"w{i}", "ladder": "warm", "occurred_at": 1_700_000_000 + i,
                                      "standings": [{"player": f"p{j}", "rank": j + 1} for j in range(3 + i)]}),
                          limits=Limits()) for i in range(3)]
    replay(rounds, engine.preset("mmr"), keep_rounds=False).states()


def main() -> None:
    for name in PRELOAD:
        __import__(name)
    _warm_engine()
    if threading.active_count() != 1:  # a fork copies only the forking thread
        raise RuntimeError(f"a preloaded module started threads: {threading.enumerate()}")
    gc.freeze()  # the children's collections leave the preloaded objects (and their shared pages) alone
    request = _serve(sys.argv[1])
    if request:
        _become(request)


if __name__ == "__main__":
    main()
