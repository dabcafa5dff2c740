"""Phase one's per-player barrier: read priors only once every earlier round has been applied.

Round t marks its participants ``queued_seq = t`` (phase one), phase two sets ``last_seq = t``;
before rating a later round, phase one waits until ``queued_seq <= last_seq`` for each
participant (docs/design.md step 3), re-reading only the held players (or, many held, polling
the rounds they wait on). The wait backs off, never gives up, warns every ``barrier_warn_s`` and
asks the caller to re-drive the rounds holding it after ``sweep_timeout_s`` (then twice as long
each time). A player already past the round (``last_seq >= seq``: another attempt rated it)
stops the attempt with :class:`RoundOvertaken`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence

import numpy as np

from stream.logsafe import log_ids, log_safe
from stream.settings import Settings
from stream.store.store import STATUS_RATED, Priors, Store

log = logging.getLogger(__name__)

Redrive = Callable[[list[str]], Awaitable[None]]


class RoundOvertaken(Exception):
    """Some players' stored state already holds the round or a later one: another attempt rated it."""

    def __init__(self, ladder: str, round_id: str, players: Sequence[str]) -> None:
        super().__init__(f"round {ladder}/{round_id}: {len(players)} player(s) already past it, e.g. "
                         f"{log_ids(players)}")
        self.ladder, self.round_id, self.players = ladder, round_id, list(players)


async def wait_for_priors(store: Store, settings: Settings, ladder: str, players: Sequence[str], seq: int | np.ndarray,
                          round_id: str, redrive: Redrive | None = None, first: Priors | None = None,
                          states: bool = False) -> Priors:
    """Priors of ``players`` for round ``seq`` (or one seq per player), once the barrier lets every
    one through. ``first``: priors already read, the first check; ``states``: read packed states too."""
    seqs = np.broadcast_to(np.asarray(seq, dtype=np.int64), (len(players),))
    started = time.monotonic()
    delay = settings.barrier_poll_s
    next_warning = started + settings.barrier_warn_s
    redrive_period = settings.sweep_timeout_s
    next_redrive = started + redrive_period
    priors = first if first is not None else await store.load_priors(ladder, players, seqs, states=states)
    if priors.overtaken:
        raise RoundOvertaken(ladder, round_id, priors.overtaken)
    position = {player: i for i, player in enumerate(players)} if priors.blocked else {}
    blocked, rounds = priors.blocked, await _rounds_to_watch(store, settings, ladder, priors)
    next_full_check = started + settings.barrier_full_check_s
    while blocked:
        now = time.monotonic()
        if now >= next_warning:
            log.warning("round %s/%s (seq %d) still waits after %.1fs for earlier updates of %d player(s), e.g. %s",
                        log_safe(ladder), log_safe(round_id), int(seqs.min(initial=0)), now - started, len(blocked),
                        log_ids(blocked))
            next_warning = now + settings.barrier_warn_s
        if redrive is not None and now >= next_redrive:
            await redrive(blocked)
            # each further re-drive waits twice as long (see sweeper.py: no re-sends piling onto a backlog)
            redrive_period = min(redrive_period * 2.0,
                                 settings.sweep_timeout_s * 2.0 ** max(0, settings.sweep_backoff_doublings))
            next_redrive = now + redrive_period
        await asyncio.sleep(delay)
        delay = min(delay * 2.0, settings.barrier_max_poll_s)
        if rounds and time.monotonic() < next_full_check and \
                any(status != STATUS_RATED for status in await store.round_statuses(ladder, rounds)):
            continue  # many players held: re-read them only once the rounds they wait on are rated (all applied)
        held = np.asarray([position[player] for player in blocked], dtype=np.int64)
        check = await store.load_priors(ladder, blocked, seqs[held], states=states)  # re-check the blocked ones only
        if check.overtaken:  # another attempt rated the round meanwhile, and phase two applied it
            raise RoundOvertaken(ladder, round_id, check.overtaken)
        # a player let through has its final prior in this read: no later round of the ladder can
        # be queued for it while this one waits (phase one of a ladder is sequential)
        still = set(check.blocked)
        released = [i for i, player in enumerate(blocked) if player not in still]
        rows = np.asarray([position[blocked[i]] for i in released], dtype=np.int64)
        for name in ("mu", "sigma", "last_time", "known", "last_seq"):
            if getattr(priors, name) is not None:
                getattr(priors, name)[rows] = getattr(check, name)[released]
        if priors.states is not None and check.states is not None:
            for row, i in zip(rows.tolist(), released):
                priors.states[row] = check.states[i]
        blocked, rounds = check.blocked, await _rounds_to_watch(store, settings, ladder, check)
        next_full_check = time.monotonic() + settings.barrier_full_check_s
    priors.blocked, priors.waiting_on = [], []
    return priors


async def _rounds_to_watch(store: Store, settings: Settings, ladder: str, priors: Priors) -> list[str]:
    """The rounds the barrier polls instead of re-reading held players (none while few are held)."""
    if len(priors.blocked) <= settings.barrier_direct_players:
        return []
    return await store.round_ids(ladder, priors.waiting_on)
