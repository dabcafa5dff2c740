"""Phase one's per-player barrier: read priors only once every earlier round has been applied.

Round seq t of a ladder marks its participants ``queued_seq = t`` (phase one) and phase two
sets ``last_seq = t`` when it applies their update. Before rating round t' > t, phase one
polls until, for each participant, ``queued_seq <= last_seq`` (store.load_priors): then the
stored (mu, sigma) are the posteriors of the player's latest round, as a sequential replay
would see them. Only the rounds that share players wait; a ladder pipelines the others.

Only the blocked players are re-checked while waiting; the check that lets a player through
also holds its final prior, so nothing is read again after the wait. When many players are held (a big round sharing players with the previous
one), even that re-read is costly (thousands of hashes every few ms, competing with the
phase two it waits for): the barrier then polls the status of the few rounds they wait on and
re-reads the players once those are ``rated`` (or every ``barrier_full_check_s``).

The wait is a bounded exponential backoff between checks; it never gives up (proceeding
would break the equality with replay) but logs a warning every ``barrier_warn_s``, and after
``sweep_timeout_s`` asks the caller to re-drive the rounds still holding it (re-send their
stored fan-out: lost or stuck player updates then complete; re-sends are idempotent), then again
after twice as long each time (up to ``2**sweep_backoff_doublings`` times the first wait).

The barrier never returns a prior that already includes the round being rated or a later one:
a player whose ``last_seq`` is at or past the round's seq (``Priors.overtaken``: another attempt,
e.g. the sweeper completing a round a crashed worker left, stored the round and phase two
applied it while this attempt waited) stops the attempt with :class:`RoundOvertaken`; its
caller treats the round as no longer its to rate (``phase_one``: the stored fan-out is sent,
a batch's rounds of the ladder are handled again, each as a batch of one).
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
    """The stored state of some players already holds the round being rated or a later one
    (``last_seq >= seq``): it is no prior of this round, and the round was rated by another
    attempt. Raised by :func:`wait_for_priors`, never a failure of the round."""

    def __init__(self, ladder: str, round_id: str, players: Sequence[str]) -> None:
        super().__init__(f"round {ladder}/{round_id}: {len(players)} player(s) already past it, e.g. "
                         f"{log_ids(players)}")
        self.ladder, self.round_id, self.players = ladder, round_id, list(players)


async def wait_for_priors(store: Store, settings: Settings, ladder: str, players: Sequence[str], seq: int | np.ndarray,
                          round_id: str, redrive: Redrive | None = None, first: Priors | None = None,
                          states: bool = False) -> Priors:
    """Priors of ``players`` for round ``seq``, once the barrier lets every one of them through.

    ``seq``: the round's, or one per player (a batch: each player's first round in it);
    ``round_id`` names the wait in logs. ``first``: the players' priors already read (with the
    registration), used as the first check instead of reading them again. ``states``: read the
    packed engine states too (``first`` must hold them then)."""
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
        if rounds and time.monotonic() < next_full_check and not await _all_rated(store, ladder, rounds):
            continue  # many players held: re-read them only once the rounds they wait on are rated
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
    """The rounds whose status the barrier polls instead of re-reading every held player: none
    while few players are held (re-reading them is as cheap), else the rounds they wait on."""
    if len(priors.blocked) <= settings.barrier_direct_players:
        return []
    return await store.round_ids(ladder, priors.waiting_on)


async def _all_rated(store: Store, ladder: str, round_ids: list[str]) -> bool:
    """Whether every round is ``rated``: each of its players' updates is applied (a player's
    result is recorded only once its state holds the round), so its players are released."""
    return all(status == STATUS_RATED for status in await store.round_statuses(ladder, round_ids))
