"""Phase one's cross-batch cache of the posteriors it computed (DESIGN15 "Phase one per batch").

Phase one rates a ladder's rounds of a batch with one ``engine.rate_rounds`` call, which gives
every participant's state after its last round of the batch: the posterior phase two will
store when it applies that round (paper Algorithm 1: phase two's update is deterministic given
the prior and the performances phase one sent). The next batch often shares players with this
one while phase two has not applied it yet; the per-player barrier (``barrier.py``) would hold
them until it has. This cache keeps, per (ladder, player), that posterior with the ``seq`` of
the round that produced it, and the next batch takes it for a player the barrier holds when
the entry's seq is the one the barrier waits for (``Priors.waits_for``: the round Redis says is
the latest queued for the player): the prior the barrier would have read once phase two
applied that round, without waiting for it. The fan-out entry then names that round as its
``previous_seq``, so phase two's chain rule (``chains.py``) applies the rounds in the same order.

Why a matching seq is enough:

* A ladder's seq only grows (register_round.lua) and a player's ``queued_seq`` never goes down
  (mark_queued.lua): whichever worker rated a later round of the player since (a rebalance gave
  it the ladder's partition, a sweeper completed a round), the queued seq has moved past the
  entry's and the barrier is the fallback. Nothing needs to hear of partition revocation.
* An entry is kept only for rounds whose fan-out this worker's attempt stored
  (``Store.queue_batch`` said so), after the store: a batch that raised or was killed keeps
  nothing, and its next attempt waits as before (the marks below its round: ``Store.priors``).
* A correction rewrites states without moving seqs. It holds the ladder first (registration
  answers ``held``) and moves the ladder's ``corrections`` counter when it re-rates
  (finish_correction.lua; read with every batch's registration): either drops the ladder's
  entries. Phase two giving up on a section (``updates_batches.release_update``) leaves the
  round's players un-updated but voids the round by such a correction, which holds the ladder
  at once.
* A registration handing out a seq at or below one already cached (Redis lost writes, e.g.
  restarted from an older snapshot) drops the ladder's entries.

Memory is bounded: at most ``capacity`` (player, ladder) entries (PHASE_ONE_CACHE_PLAYERS), the
least recently stored evicted first; an entry holds one packed engine state (``state.pack_batch``:
41 bytes plus 24 per factor of history). Only players whose last round is still in flight use
their entry, so a few batches' worth of players is enough. A ladder's batch with more players
than half the capacity keeps nothing (:meth:`PosteriorCache.worth_keeping`). 0 turns the cache off.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import repeat

import numpy as np

from stream.store.store import Priors


@dataclass
class _Ladder:
    """What the cache knows of a ladder: the generation of its live entries (entries of an older
    one are stale), the ``corrections`` counter they were computed under, the highest seq kept."""

    generation: int = 0
    corrections: int | None = None
    high: int = 0


@dataclass
class PosteriorCache:
    """Per (ladder, player) the packed posterior phase one computed and the seq of its round
    (module docstring). Not shared between workers; one per :class:`PipelineContext`."""

    capacity: int
    _entries: OrderedDict[tuple[str, str], tuple[int, int, bytes]] = field(default_factory=OrderedDict)
    _ladders: dict[str, _Ladder] = field(default_factory=dict)
    hits: int = 0
    """Players the cache let through the barrier so far (for tests and profiles)."""

    def __len__(self) -> int:
        return len(self._entries)

    def drop(self, ladder: str) -> None:
        """Forget every entry of ``ladder`` (they stay in the LRU until evicted, ignored)."""
        state = self._ladders.get(ladder)
        if state is not None:
            state.generation += 1
            state.high = 0

    def observe(self, ladder: str, *, corrections: int, held: bool = False, new_seqs: Iterable[int] = ()) -> None:
        """What a batch's registration saw of ``ladder``: its ``corrections`` counter, whether a
        correction holds it, the seqs it handed out to new rounds. Drops the ladder's entries
        when the counter moved, the ladder is held, or a new seq is not above every cached one."""
        state = self._ladders.setdefault(ladder, _Ladder())
        if held or (state.corrections is not None and state.corrections != corrections) or \
                any(seq <= state.high for seq in new_seqs):
            self.drop(ladder)
        state.corrections = corrections

    def fill(self, ladder: str, players: Sequence[str], priors: Priors) -> None:
        """Let through the barrier each held player of ``priors`` (read for ``players``, with
        states) whose entry's seq is the one it waits for: its state becomes the cached
        posterior and its ``last_seq`` that round's seq (the ``previous_seq`` its fan-out entry
        names): what the batch path reads (a read with states has no ``mu``, ``sigma``,
        ``last_time`` or ``known``: the states hold them). ``blocked`` and ``waiting_on`` then list
        the others only."""
        state = self._ladders.get(ladder)
        if not priors.blocked or state is None or not self._entries:
            return
        assert priors.states is not None and priors.last_seq is not None and priors.waits_for is not None
        position = {player: i for i, player in enumerate(players)}
        generation, entries = state.generation, self._entries
        still: list[str] = []
        for player in priors.blocked:
            row = position[player]
            entry = entries.get((ladder, player))
            if entry is None or entry[0] != generation or entry[1] != priors.waits_for[row]:
                still.append(player)
                continue
            priors.states[row] = entry[2]
            priors.last_seq[row] = entry[1]
        self.hits += len(priors.blocked) - len(still)
        if len(still) != len(priors.blocked):
            rows = np.fromiter((position[p] for p in still), dtype=np.int64, count=len(still))
            priors.blocked = still
            priors.waiting_on = np.unique(priors.waits_for[rows]).tolist()

    def worth_keeping(self, players: int) -> bool:
        """Whether to keep a ladder's batch of ``players`` players: not when they would fill more
        than half the cache (a large round: it would evict every other entry, and packing its
        states costs the batch time; its players then wait at the barrier as before)."""
        return 0 < players <= self.capacity // 2

    def entry(self, ladder: str, player: str) -> tuple[int, bytes] | None:
        """The live entry of a player of a ladder: (seq, packed state), or None."""
        state, entry = self._ladders.get(ladder), self._entries.get((ladder, player))
        if state is None or entry is None or entry[0] != state.generation:
            return None
        return entry[1], entry[2]

    def keep(self, ladder: str, players: Sequence[str], seqs: np.ndarray, states: Sequence[bytes]) -> None:
        """Store each player's posterior ``states[i]`` after its round ``seqs[i]`` (its last of the
        batch; a seq of 0 or less: nothing kept for that player), evicting the least recently
        stored entries beyond the capacity."""
        if self.capacity <= 0:
            return
        state = self._ladders.setdefault(ladder, _Ladder())
        generation, entries = state.generation, self._entries
        numbers = seqs.tolist()
        if len(numbers) and min(numbers) > 0:  # every player kept (a batch's last seqs): C-level loops
            keys = list(zip(repeat(ladder), players))
            entries.update(zip(keys, zip(repeat(generation), numbers, states)))
            deque(map(entries.move_to_end, keys), maxlen=0)  # an entry stored again is the most recent
        else:
            for player, seq, blob in zip(players, numbers, states):
                if seq <= 0:
                    continue
                key = (ladder, player)
                entries[key] = (generation, seq, blob)
                entries.move_to_end(key)
        state.high = max(state.high, int(seqs.max(initial=0)))
        while len(entries) > self.capacity:
            entries.popitem(last=False)
