"""Phase one's cross-batch cache of the posteriors it computed (DESIGN15 "Phase one per batch").

Per (ladder, player), the state after the player's last round of a batch with that round's
``seq``: phase two will store the same (paper Algorithm 1: its update is deterministic given the
prior and the performances). The next batch takes it for a player the barrier (``barrier.py``)
holds when the entry's seq is the one the barrier waits for (``Priors.waits_for``), and names
that round as the entry's ``previous_seq`` (``chains.py`` keeps the order). A matching seq is
enough: seqs only grow and ``queued_seq`` never goes down (another rater moves it past the
entry); entries are kept only after this attempt's store (``Store.queue_batch``); a hold, a moved
``corrections`` counter or a seq handed out again drop the ladder's entries. At most
``capacity`` entries (PHASE_ONE_CACHE_PLAYERS, least recently stored evicted; 0: off); a ladder's
batch over half of it keeps nothing (:meth:`PosteriorCache.worth_keeping`).
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
    """A ladder's live generation (older entries are stale), ``corrections`` counter and highest seq kept."""

    generation: int = 0
    corrections: int | None = None
    high: int = 0


@dataclass
class PosteriorCache:
    """Per (ladder, player) the packed posterior phase one computed and its round's seq; one per context."""

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

    def observe(self, ladder: str, *, corrections: int, new_seqs: Iterable[int] = ()) -> None:
        """What a batch's registration saw of ``ladder``: drops its entries when its ``corrections``
        counter moved or a seq handed out is not above every cached one."""
        state = self._ladders.setdefault(ladder, _Ladder())
        if (state.corrections is not None and state.corrections != corrections) or \
                any(seq <= state.high for seq in new_seqs):
            self.drop(ladder)
        state.corrections = corrections

    def fill(self, ladder: str, players: Sequence[str], priors: Priors) -> None:
        """Let through the barrier each held player of ``priors`` whose entry's seq is the one it
        waits for: its state and ``last_seq`` become the entry's; ``blocked`` lists the others."""
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
        """Whether to keep a ladder's batch of ``players`` players: not past half the cache (a large
        round would evict every other entry, and packing its states costs time)."""
        return 0 < players <= self.capacity // 2

    def keep(self, ladder: str, players: Sequence[str], seqs: np.ndarray, states: Sequence[bytes]) -> None:
        """Store each player's posterior ``states[i]`` after its round ``seqs[i]`` (0 or less: none),
        evicting the least recently stored entries beyond the capacity."""
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
