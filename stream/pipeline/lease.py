"""Phase one's ladder leases: one phase-one rater per ladder at a time (issue 26, item 4).

An attempt rates a ladder's rounds only while it holds the ladder's lease (``Store.acquire_lease``,
acquire_lease.lua: an owner id in Redis for PHASE_ONE_LEASE_MS) and stores their fan-out with the
lease's fencing token: save_fanout.lua refuses a token below the ladder's fence (``SAVE_FENCED``),
so an attempt whose lease lapsed and was taken by another (a zombie worker after a rebalance, a
worker paused past its lease) stores nothing from its computation. Its rounds stay ``registered``
(never lost: registration stored their bodies and put them in the sweeper's ledger) and are rated
by the holder: its batch (whose registration reports them as earlier rounds) or the sweeper.

Holders: a batch (``phase_one.handle_rounds``) as the worker's batch owner
(``PipelineContext.lease_owner``: a batch retried after an error takes it again with the same
token), taken in the batch's registration round trip and given up in its store round trip; the
sweeper completing a ladder's registered rounds (:func:`sweeper_lease`) as an owner of its own,
so a worker's sweeper and its batches exclude each other too. A ladder whose lease another owner
holds past PHASE_ONE_LEASE_MS is not rated by this attempt.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from stream.store.store import Store


@dataclass
class Leases:
    """The ladder leases one phase-one attempt holds: its ``owner`` id, the lease time, and each
    held ladder's fencing token (the value its fenced writes carry)."""

    owner: str
    ttl_ms: int
    tokens: dict[str, int] = field(default_factory=dict)
    renewed_at: float = field(default_factory=time.monotonic)
    """``time.monotonic()`` when the leases were last taken or renewed."""

    def token(self, ladder: str) -> int:
        """The ladder's fencing token; 0: not held."""
        return self.tokens.get(ladder, 0)

    async def take(self, store: Store, ladders: Iterable[str], poll_s: float) -> set[str]:
        """Take the leases of ``ladders`` not held yet, trying again every ``poll_s`` for up to the
        lease time (a crashed holder's lease lapses within it); those still held by another owner
        then stay untaken. Returns the ladders taken now (another attempt held them until then)."""
        missing = [ladder for ladder in dict.fromkeys(ladders) if not self.token(ladder)]
        wanted = set(missing)
        deadline = time.monotonic() + self.ttl_ms / 1000
        while missing:
            for ladder in missing:
                self.tokens[ladder] = await store.acquire_lease(ladder, self.owner, self.ttl_ms)
            missing = [ladder for ladder in missing if not self.tokens[ladder]]
            if not missing or time.monotonic() >= deadline:
                break
            await asyncio.sleep(poll_s)
        for ladder in missing:
            del self.tokens[ladder]
        return wanted - set(missing)

    async def renew_if_due(self, store: Store) -> None:
        """Renew the held leases once half the lease time has passed since they were taken (no Redis
        call before: a batch renews only when long); a lease another owner took meanwhile is dropped
        (its ladder's fenced writes would be refused anyway)."""
        if time.monotonic() - self.renewed_at < self.ttl_ms / 2000:
            return
        self.renewed_at = time.monotonic()
        for ladder in list(self.tokens):
            token = await store.acquire_lease(ladder, self.owner, self.ttl_ms)
            if token == self.tokens[ladder]:
                continue
            del self.tokens[ladder]


@asynccontextmanager
async def sweeper_lease(store: Store, ladder: str, owner: str, ttl_ms: int) -> AsyncIterator[Leases]:
    """The sweeper's lease of ``ladder`` while it completes the ladder's registered rounds (no token,
    ``Leases.token`` 0, when another owner holds it: the rounds are left to that one, or to a later
    sweep); given up on leaving."""
    leases = Leases(owner, ttl_ms)
    token = await store.acquire_lease(ladder, owner, ttl_ms)
    if token:
        leases.tokens[ladder] = token
    try:
        yield leases
    finally:
        if token:
            await store.release_leases([ladder], owner)
