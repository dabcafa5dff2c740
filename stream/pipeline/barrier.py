"""Phase one's per-player barrier: read priors only once every earlier round has been applied.

Round seq t of a ladder marks its participants ``queued_seq = t`` (phase one) and phase two
sets ``last_seq = t`` when it applies their update. Before rating round t' > t, phase one
polls until, for each participant, ``queued_seq <= last_seq`` (store.load_priors): then the
stored (mu, sigma) are the posteriors of the player's latest round, as a sequential replay
would see them. Only the rounds that share players wait; a ladder pipelines the others.

Only the blocked players are re-checked while waiting, and only their priors are read again
after the wait. The wait is a bounded exponential backoff between checks; it never gives up (proceeding
would break the equality with replay) but logs a warning every ``barrier_warn_s``, and after
``sweep_timeout_s`` asks the caller to re-drive the rounds still holding it (re-send their
stored fan-out: lost or stuck player updates then complete; re-sends are idempotent).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence

import numpy as np

from stream.settings import Settings
from stream.store.store import Priors, Store

log = logging.getLogger(__name__)

Redrive = Callable[[list[str]], Awaitable[None]]


async def wait_for_priors(store: Store, settings: Settings, ladder: str, players: Sequence[str], seq: int,
                          round_id: str, redrive: Redrive | None = None) -> Priors:
    """Priors of ``players`` for round ``seq``, once the barrier lets every one of them through."""
    started = time.monotonic()
    delay = settings.barrier_poll_s
    next_warning = started + settings.barrier_warn_s
    next_redrive = started + settings.sweep_timeout_s
    priors = await store.load_priors(ladder, players, seq)
    held = set(priors.blocked)
    waited_on = np.asarray([i for i, p in enumerate(players) if p in held], dtype=np.int64)
    blocked = priors.blocked
    while blocked:
        now = time.monotonic()
        if now >= next_warning:
            log.warning("round %s/%s (seq %d) still waits after %.1fs for earlier updates of %d player(s), e.g. %s",
                        ladder, round_id, seq, now - started, len(blocked), blocked[:5])
            next_warning = now + settings.barrier_warn_s
        if redrive is not None and now >= next_redrive:
            await redrive(blocked)
            next_redrive = now + settings.sweep_timeout_s
        await asyncio.sleep(delay)
        delay = min(delay * 2.0, settings.barrier_max_poll_s)
        blocked = (await store.load_priors(ladder, blocked, seq)).blocked  # re-check the blocked ones only
    if len(waited_on):
        # only the players we waited on can have new posteriors (phase one of a ladder is sequential)
        fresh = await store.load_priors(ladder, [players[i] for i in waited_on], seq)
        priors.mu[waited_on], priors.sigma[waited_on] = fresh.mu, fresh.sigma
        priors.last_time[waited_on], priors.known[waited_on] = fresh.last_time, fresh.known
        priors.blocked = []
    return priors
