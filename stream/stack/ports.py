"""Free loopback ports for the embedded services, waiting for one to listen, stopping a process, and
:class:`LocalService`, what the broker and redis-server have in common."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

#: Seconds a stopping service gets after SIGTERM before it is killed.
STOP_TIMEOUT_S = 10.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, timeout_s: float = 20.0, host: str = "127.0.0.1") -> None:
    """Block until something accepts connections on ``host:port``; raise TimeoutError otherwise."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {host}:{port} after {timeout_s:.0f} s")


def stop_process(process: subprocess.Popen[bytes], timeout_s: float, *, kill: bool = False) -> None:
    """SIGTERM ``process`` (SIGKILL with ``kill``), SIGKILL it if it has not exited after ``timeout_s``."""
    if kill:
        process.kill()
    else:
        process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class Managed:
    """``with`` starts it and closes it again."""

    def start(self) -> Self:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class LocalService(Managed):
    """A child process serving on loopback ``port`` (a free one if 0) with its own ``workdir`` (a temporary
    folder if None, removed by :meth:`close`)."""

    port: int = 0
    workdir: Path | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    detached: bool = False
    """Run in its own process session: a terminal's Ctrl-C (SIGINT to the foreground process group) then
    reaches only the parent, which stops the service after its clients."""
    temporary: bool = field(default=False, repr=False)
    """``workdir`` is a temporary folder this service made: :meth:`close` removes it."""

    def prepare(self, prefix: str) -> Path:
        """Pick the port and the workdir (made if missing) before the start."""
        if not self.port:
            self.port = free_port()
        if self.workdir is None:
            self.workdir, self.temporary = Path(tempfile.mkdtemp(prefix=prefix)), True
        self.workdir.mkdir(parents=True, exist_ok=True)
        return self.workdir

    def alive(self) -> bool:
        """Whether the process is still running."""
        return self.process is not None and self.process.poll() is None

    def stop(self, kill: bool = False) -> None:
        """Stop the process (SIGKILL with ``kill=True``, as a crash would); the workdir is kept."""
        if self.process is not None:
            stop_process(self.process, STOP_TIMEOUT_S, kill=kill)
            self.process = None

    def close(self) -> None:
        """Stop, and remove the workdir if it is a temporary one (its data with it): nothing is left behind."""
        self.stop()
        if self.temporary and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir, self.temporary = None, False
