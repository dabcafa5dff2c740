"""``RedisServer`` with extra redis.conf lines (what the ACL and TLS fixtures use): a server that
cannot start fails at once with the server's own message, and leaves no process behind."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from stream.stack.redis_server import START_TIMEOUT_S, RedisServer


def test_a_bad_config_line_fails_the_start_with_the_servers_message(tmp_path: Path) -> None:
    server = RedisServer(workdir=tmp_path, config=["user default off", "no-such-directive yes"])
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="no-such-directive"):
        server.start()
    assert time.monotonic() - started < START_TIMEOUT_S / 2  # noticed the exit, did not wait it out
    assert server.process is None
    assert (tmp_path / "redis.conf").read_text().splitlines() == ["user default off", "no-such-directive yes"]
