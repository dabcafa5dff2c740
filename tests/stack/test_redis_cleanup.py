"""Issue 29 item 14: a stopped embedded Redis leaves no temporary ``ems-redis-*`` folder behind."""

from __future__ import annotations

from pathlib import Path

from stream.stack.local import LocalStack
from stream.stack.redis_server import RedisServer


def test_close_removes_the_temporary_folder_but_not_a_given_one(tmp_path: Path) -> None:
    server = RedisServer().start()
    made = server.workdir
    assert made is not None and made.name.startswith("ems-redis-") and made.is_dir()
    server.stop(kill=True)  # a crash and restart keep the folder (the AOF is replayed from it)
    server.start()
    assert made.is_dir()
    server.close()
    assert not made.exists() and server.process is None
    given = tmp_path / "redis"
    kept = RedisServer(workdir=given).start()
    kept.close()
    assert given.is_dir()  # the caller's folder is the caller's


def test_a_stopped_local_stack_leaves_no_redis_folder() -> None:
    stack = LocalStack().start()
    folder = stack.redis.workdir
    assert folder is not None and folder.is_dir()
    stack.close()
    stack.close()  # twice is fine
    assert not folder.exists()
