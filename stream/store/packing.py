"""Redis commands encoded by hiredis' C packer instead of redis-py's Python one (~4 µs an argument,
more than the maths on 10,000-player rounds): the same bytes about 6x faster; arguments hiredis
does not take (e.g. a memoryview) fall back to redis-py's packer.
"""

from __future__ import annotations

from typing import Any

import hiredis
import redis.asyncio as aioredis

UTF8 = "utf-8"


class HiredisPacking:
    """Mixin for a redis.asyncio connection class: ``pack_command`` through hiredis."""

    def pack_command(self, *args: Any) -> list[bytes]:
        first = args[0]
        if isinstance(first, str) and " " in first or isinstance(first, bytes) and b" " in first:
            args = (*first.split(), *args[1:])  # e.g. "SCRIPT LOAD": redis-py sends the words apart
        try:
            return [hiredis.pack_command(args)]
        except TypeError:
            return super().pack_command(*args)  # type: ignore[misc, no-any-return]


def use_hiredis_packing(client: aioredis.Redis) -> None:
    """Make the connections ``client``'s pool opens from now on pack with hiredis (UTF-8 only,
    the encoding hiredis assumes; idempotent)."""
    pool = client.connection_pool
    base = pool.connection_class
    if issubclass(base, HiredisPacking) or pool.connection_kwargs.get("encoding", UTF8).lower() != UTF8:
        return
    pool.connection_class = type(f"Hiredis{base.__name__}", (HiredisPacking, base), {})
