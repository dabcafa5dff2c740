"""Store calls only the tests make, one round or one player at a time: the pipeline makes them in
batches (``Store.register_batch``, ``queue_batch``, ``apply_batch``), which these are built on."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from stream.store import keys, player_hash
from stream.store.client import as_bytes, as_text
from stream.store.store import (
    NEVER_DUE, OUTCOME_HELD, OUTCOME_LATE, OUTCOME_MODEL_CHANGED, OUTCOME_STALE_SCHEDULE, SAVED_NOW,
    STATUS_REGISTERED, BatchWrites, NewRound, Priors, QueuedRound, Registration, Store, _fanout_args, _fanout_keys,
    encode_float,
)


async def register_round(
    store: Store, ladder: str, round_id: str, *, content_hash: str, occurred_at: float,
    received_at: float, field_size: int, status: str = STATUS_REGISTERED, body: str | bytes = "",
    due_at: float = NEVER_DUE, prefetch: Sequence[str] = (), perf_ceiling: float = math.inf,
    model: str = "", model_params: str = "", by_time: bool = False, schedule_version: int = 0,
) -> Registered:
    """``Store.register_batch`` of one round; with ``prefetch`` (the participants) their priors
    read in the same round trip, after the registration."""
    round_ = NewRound(ladder, round_id, content_hash, occurred_at, received_at, field_size, status, body, due_at,
                      perf_ceiling, model, model_params, by_time, schedule_version)
    (registration,), columns = await store.register_batch([round_], [(ladder, p) for p in prefetch], player_hash.PRIORS)
    held = registration.outcome in (OUTCOME_HELD, OUTCOME_MODEL_CHANGED, OUTCOME_LATE, OUTCOME_STALE_SCHEDULE)
    priors = store.priors(prefetch, columns, registration.seq) if prefetch and not held else None
    return Registered(registration.outcome, registration.seq, registration.status, registration.earlier,
                      corrections=registration.corrections if held else 0, fence=registration.fence if held else 0,
                      priors=priors)


@dataclass(slots=True)
class Registered(Registration):
    """A registration and the participants' priors read in the same round trip (``prefetch``)."""

    priors: Priors | None = None


async def save_fanout(store: Store, ladder: str, round_id: str, *, pending: int,
                      messages: Sequence[tuple[int, bytes]], due_at: float = NEVER_DUE) -> bool:
    """Store a round's fan-out and mark it pending (save_fanout.lua); whether it was stored now."""
    round_ = QueuedRound(ladder, round_id, (), 0, pending, messages, due_at)
    (done,) = await store._run(
        lambda pipe: store._eval(pipe, "save_fanout", _fanout_keys(round_), _fanout_args(round_)))
    return int(done) == SAVED_NOW


async def mark_queued(store: Store, ladder: str, players: Sequence[str], seq: int) -> None:
    """Record that round ``seq`` is queued for each player (mark_queued.lua)."""
    await store._run(lambda pipe: store._per_player(pipe, "mark_queued", keys.players(ladder, players), [seq]))


async def load_results(store: Store, ladder: str, round_id: str, players: Sequence[str]) -> list[bytes | None]:
    """The stored RatingChange JSON of ``players`` in a round (None where absent)."""
    if not players:
        return []
    stored = await store.client.hmget(keys.round_results(ladder, round_id), list(players))
    return [None if value is None else as_bytes(value) for value in stored]


@dataclass(frozen=True)
class PlayerWrite:
    """One player's new state after round ``seq`` (input of apply_player_update.lua)."""

    player: str
    seq: int
    mu: float
    sigma: float
    rounds: int
    last_round: str
    last_time: float
    display_rating: float
    tier: str
    state: bytes
    change: bytes
    newcomer: bool


@dataclass(frozen=True)
class RoundWrites:
    """The player writes of one round, one object per player; they share ``seq`` and ``last_time``."""

    ladder: str
    round_id: str
    writes: Sequence[PlayerWrite]

    def check(self) -> None:
        """Raise ValueError unless the round's writes share one ``seq`` and one ``last_time``."""
        if len({w.seq for w in self.writes}) > 1 or len({w.last_time for w in self.writes}) > 1:
            raise ValueError("the writes of one round share seq and last_time")


def batch_writes(rounds: Sequence[RoundWrites]) -> BatchWrites:
    """The rounds' writes, in order, as one batch (numbers rendered as stored: ``encode_float``)."""
    for r in rounds:
        r.check()
    ws = [w for r in rounds for w in r.writes]
    return BatchWrites(
        ladders=[r.ladder for r in rounds], round_ids=[r.round_id for r in rounds],
        seqs=[r.writes[0].seq if r.writes else 0 for r in rounds],
        last_times=[r.writes[0].last_time if r.writes else math.nan for r in rounds],
        starts=np.cumsum([0, *(len(r.writes) for r in rounds)]).tolist(), players=[w.player for w in ws],
        mu=[encode_float(w.mu) for w in ws], sigma=[encode_float(w.sigma) for w in ws],
        rounds=[w.rounds for w in ws], display_rating=[encode_float(w.display_rating) for w in ws],
        tiers=[w.tier for w in ws], states=[w.state for w in ws], changes=[w.change for w in ws],
        newcomer=np.array([w.newcomer for w in ws], dtype=bool))


async def apply(store: Store, rounds: Sequence[RoundWrites], *, now: float) -> list[list[bool]]:
    """``Store.apply_batch`` of these rounds' writes; per round, which writes were applied now."""
    batch = batch_writes(rounds)
    applied = (await store.apply_batch(batch, now=now)).tolist()
    return [applied[lo:hi] for lo, hi in zip(batch.starts[:-1], batch.starts[1:])]


async def stored_player(store: Store, ladder: str, player: str) -> dict[str, bytes]:
    """A player's hash (field names as text, values as bytes)."""
    raw = await store.client.hgetall(keys.player(ladder, player))
    return {as_text(k): as_bytes(v) for k, v in raw.items()}
