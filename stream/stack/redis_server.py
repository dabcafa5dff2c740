"""A private ``redis-server`` on a free loopback port (never the machine's shared one), plain or configured
like a secured deployment (ACL rules and TLS files in ``config``, a TLS-only listener, a binary built with TLS).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from stream.stack.ports import LocalService, wait_for_port

START_TIMEOUT_S = 20.0
"""Seconds a redis-server gets to start listening."""
LOG_TAIL_CHARS = 500
"""How much of the server's log a start failure quotes."""
CONSOLE_FILE = "redis.console"
"""The server's stdout and stderr, in its directory (where it reports a bad config line)."""


@dataclass
class RedisServer(LocalService):
    """A redis-server child process: ``config``, extra redis.conf lines (the options this class sets come after
    them and win); ``tls``: the port speaks TLS only; ``binary``: default the one on PATH."""

    appendonly: bool = False
    config: Sequence[str] = ()
    tls: bool = False
    binary: str | None = None

    @property
    def url(self) -> str:
        return f"{'rediss' if self.tls else 'redis'}://127.0.0.1:{self.port}/0"

    def start(self) -> "RedisServer":
        """Start on ``port`` (a free one if 0) and wait until it listens; raise RuntimeError with
        the end of its log if it exits or does not listen within START_TIMEOUT_S."""
        binary = self.binary or shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server not found: install Debian's redis-server package (apt-get install redis-server)")
        workdir = self.prepare("ems-redis-")
        with open(workdir / CONSOLE_FILE, "ab") as console:  # config errors go there, not to the log
            self.process = subprocess.Popen(self._command(binary, workdir), stdout=console, stderr=console,
                                            start_new_session=self.detached)
        self._wait_listening(binary, workdir)
        return self

    def _command(self, binary: str, workdir: Path) -> list[str]:
        """The redis-server command line: the config file (if any) first, then our options."""
        args = [binary]
        if self.config:
            conf = workdir / "redis.conf"
            conf.write_text("\n".join(self.config) + "\n")
            args.append(str(conf))
        args += ["--port", "0", "--tls-port", str(self.port)] if self.tls else ["--port", str(self.port)]
        args += [
            "--bind", "127.0.0.1", "--dir", str(workdir),
            "--save", "", "--appendonly", "yes" if self.appendonly else "no",
            "--appendfsync", "always", "--logfile", str(workdir / "redis.log"),
        ]
        return args

    def _wait_listening(self, binary: str, workdir: Path) -> None:
        """Return once the port accepts connections; stop and raise if the server exits first
        (a bad config line, a build without TLS) or START_TIMEOUT_S passes."""
        assert self.process is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while self.process.poll() is None and time.monotonic() < deadline:
            try:
                wait_for_port(self.port, timeout_s=0.2)
                return
            except TimeoutError:
                continue
        log = "".join(f.read_text(errors="replace") for f in (workdir / CONSOLE_FILE, workdir / "redis.log")
                      if f.exists())
        self.stop()
        raise RuntimeError(f"{binary} did not start on port {self.port}: {log[-LOG_TAIL_CHARS:]}")
