"""Cached answers of the read API (JSON bytes, least recently used out): served without Redis while younger
than ``fresh_s``, then while their version (:func:`stream.store.queries.ladder_version`) holds, for at most
``ttl_s``; concurrent requests for an answer not cached share one computation.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass


@dataclass(slots=True)
class Entry:
    version: Hashable
    body: bytes
    made: float  # clock reading when its computation started


class ResponseCache:
    """At most ``max_bytes`` of answers, none larger than ``max_entry_bytes`` (those are not kept)."""

    def __init__(self, *, ttl_s: float, max_bytes: int, max_entry_bytes: int, fresh_s: float = 0.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self.fresh_s = fresh_s
        self.max_bytes = max_bytes
        self.max_entry_bytes = max_entry_bytes
        self.clock = clock
        self.size = 0
        self._entries: OrderedDict[Hashable, Entry] = OrderedDict()
        self._running: dict[tuple[Hashable, Hashable], asyncio.Task[bytes]] = {}

    def fresh(self, key: Hashable) -> bytes | None:
        """The answer for ``key`` if it is younger than ``fresh_s`` (no version needed), else None."""
        entry = self._entries.get(key)
        if entry is None or self.clock() - entry.made >= self.fresh_s:
            return None
        self._entries.move_to_end(key)
        return entry.body

    async def get(self, key: Hashable, version: Hashable, compute: Callable[[], Awaitable[bytes]]) -> bytes:
        """The answer for ``key`` under ``version``: the cached bytes if still good, else
        ``compute()``'s (its exceptions reach every request waiting on it and nothing is kept)."""
        entry = self._entries.get(key)
        now = self.clock()
        if entry is not None and entry.version == version and now - entry.made < self.ttl_s:
            self._entries.move_to_end(key)
            return entry.body
        running = self._running.get((key, version))
        if running is None:
            running = asyncio.ensure_future(self._compute(key, version, now, compute))
            self._running[(key, version)] = running
            running.add_done_callback(lambda task: self._done(key, version, task))
        # shielded: a request that goes away does not cancel the others' computation
        return await asyncio.shield(running)

    def _done(self, key: Hashable, version: Hashable, task: asyncio.Task[bytes]) -> None:
        self._running.pop((key, version), None)
        if not task.cancelled():
            task.exception()  # retrieved here: every waiter may have gone away

    async def _compute(self, key: Hashable, version: Hashable, started: float,
                       compute: Callable[[], Awaitable[bytes]]) -> bytes:
        body = await compute()
        old = self._entries.pop(key, None)
        if old is not None:
            self.size -= len(old.body)
        if len(body) <= self.max_entry_bytes:
            self._entries[key] = Entry(version, body, started)
            self.size += len(body)
        while self.size > self.max_bytes:
            _, dropped = self._entries.popitem(last=False)
            self.size -= len(dropped.body)
        return body
