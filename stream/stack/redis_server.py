"""A private ``redis-server`` on a free loopback port (never the machine's shared one)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from stream.stack.ports import free_port, wait_for_port


@dataclass
class RedisServer:
    """A redis-server child process with its own directory; ``stop()`` ends it."""

    port: int = 0
    appendonly: bool = False
    workdir: Path | None = None
    password: str | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self) -> "RedisServer":
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server not found: install Debian's redis-server package (apt-get install redis-server)")
        if not self.port:
            self.port = free_port()
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="ems-redis-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        args = [
            binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.workdir),
            "--save", "", "--appendonly", "yes" if self.appendonly else "no",
            "--appendfsync", "always", "--logfile", str(self.workdir / "redis.log"),
        ]
        if self.password:
            args += ["--requirepass", self.password]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port)
        return self

    def stop(self, kill: bool = False) -> None:
        """Stop the server (SIGKILL with ``kill=True``, as a crash would)."""
        if self.process is None:
            return
        if kill:
            self.process.kill()
        else:
            self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def restart(self) -> None:
        """Crash and restart on the same port and directory (AOF, if on, is replayed)."""
        self.stop(kill=True)
        self.start()
