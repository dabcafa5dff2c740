"""Phase two: apply a batch of PlayerUpdates to the players' stored beliefs, then emit events.

Plain async function (no Kafka): the ``player-updates`` agent hands it a batch of messages of
one partition. Per round in the batch, ``engine.phase_two`` runs vectorised over the round's
players (paper Algorithm 2 diffusion + Algorithm 3 update, Eq. 8 sigma); then the whole batch
is written in ONE Redis round trip (``Store.apply``: a Lua script per player, one per round).

Idempotency: a player whose stored ``last_seq`` already reached the round's ``seq`` is not
recomputed (its state has moved on); the script re-checks atomically. Such players' events
are re-emitted from the round's stored results, so a redelivered task re-sends the SAME
RatingChange (same ``event_id`` and content) and consumers can deduplicate.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

import numpy as np

from stream import engine
from stream.contracts import PlayerUpdate, RatingChange
from stream.engine.display import display_rating, next_tier, tier_indices, tier_names
from stream.pipeline.context import PipelineContext
from stream.pipeline.messages import RatingChangeMessage
from stream.store.store import PlayerWrite, RoundWrites, StoredPlayer


RATING_CHANGE_FIELDS = tuple(f.name for f in fields(RatingChange))


def encode_change(change: RatingChange) -> bytes:
    """``change.to_json()`` without ``dataclasses.asdict`` (its deep copies dominated phase two's
    Python time on 10,000-player rounds). Same keys, order and format (tested equal)."""
    data = {"event_id": change.event_id, **{name: getattr(change, name) for name in RATING_CHANGE_FIELDS}}
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


@dataclass
class _RoundGroup:
    """The players of one round met in a batch (deduplicated), with the round's parameters."""

    update: PlayerUpdate
    players: list[str] = field(default_factory=list)
    ranks: list[int] = field(default_factory=list)
    performances: list[float] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)

    def add(self, update: PlayerUpdate) -> None:
        for player, rank, performance in zip(update.players, update.ranks, update.performances):
            if player not in self.seen:
                self.seen.add(player)
                self.players.append(player)
                self.ranks.append(rank)
                self.performances.append(performance)


@dataclass
class PhaseTwoResult:
    """Events to emit, and counts for metrics."""

    events: list[RatingChangeMessage]
    applied: int
    replayed: int


def group_updates(raws: Sequence[bytes]) -> list[_RoundGroup]:
    """Parse PlayerUpdate messages and merge them per (ladder, round_id), each player once."""
    groups: dict[tuple[str, str], _RoundGroup] = {}
    for raw in raws:
        update = PlayerUpdate.from_json(raw)
        key = (update.ladder, update.round_id)
        if key not in groups:
            groups[key] = _RoundGroup(update)
        groups[key].add(update)
    return list(groups.values())


async def handle_updates(ctx: PipelineContext, raws: Sequence[bytes]) -> PhaseTwoResult:
    """Phase two of a batch of ``player-updates`` messages (see the module docstring)."""
    groups = group_updates(raws)
    stored = await ctx.store.load_states([(g.update.ladder, p) for g in groups for p in g.players])
    now = time.time()
    round_writes: list[RoundWrites] = []
    offset = 0
    for group in groups:
        round_writes.append(_rate(ctx, group, stored[offset: offset + len(group.players)]))
        offset += len(group.players)
    applied = await ctx.store.apply(round_writes, now=now) if round_writes else []

    events: list[RatingChangeMessage] = []
    replay_needed: list[tuple[RoundWrites, list[str]]] = []
    applied_count = 0
    for group, writes, flags in zip(groups, round_writes, applied):
        done_now = {w.player for w, ok in zip(writes.writes, flags) if ok}
        applied_count += len(done_now)
        events += [RatingChangeMessage(w.player.encode(), w.change) for w in writes.writes if w.player in done_now]
        missing = [p for p in group.players if p not in done_now]
        if missing:
            replay_needed.append((writes, missing))
    replayed = 0
    for writes, missing in replay_needed:
        for player, change in zip(missing, await ctx.store.load_results(writes.ladder, writes.round_id, missing)):
            if change is not None:
                events.append(RatingChangeMessage(player.encode(), change))
                replayed += 1
    return PhaseTwoResult(events, applied_count, replayed)


def _rate(ctx: PipelineContext, group: _RoundGroup, stored: list[StoredPlayer]) -> RoundWrites:
    """New states of the group's players not yet past this round (vectorised engine call)."""
    update = group.update
    todo = [i for i, s in enumerate(stored) if s.last_seq < update.seq]
    if not todo:
        return RoundWrites(update.ladder, update.round_id, [])
    states = [engine.PlayerState.from_bytes(stored[i].state) if stored[i].state else engine.PlayerState.new(ctx.params)
              for i in todo]
    before = engine.PlayerBatch.from_states(states)
    performance = np.asarray([group.performances[i] for i in todo], dtype=np.float64)
    after = engine.phase_two(before, performance, ctx.params, weight=update.weight, time=update.occurred_at)
    cfg = ctx.display(update.ladder)
    shown = display_rating(after.mu, after.sigma, cfg)
    tiers = tier_names(next_tier(tier_indices([stored[i].tier for i in todo], cfg), after.mu, after.sigma, cfg), cfg)
    writes = []
    for j, (i, state) in enumerate(zip(todo, after.to_states())):
        player = group.players[i]
        change = RatingChange(
            ladder=update.ladder, round_id=update.round_id, player=player, rank=int(group.ranks[i]),
            field_size=update.field_size, performance=float(performance[j]),
            mu_before=float(before.mu[j]), sigma_before=float(before.sigma[j]),
            mu_after=state.mu, sigma_after=state.sigma, display_rating=float(shown[j]),
            tier=tiers[j] or None, rounds_played=state.rounds, occurred_at=update.occurred_at)
        writes.append(PlayerWrite(
            player=player, seq=update.seq, mu=state.mu, sigma=state.sigma, rounds=state.rounds,
            last_round=update.round_id, last_time=update.occurred_at, display_rating=float(shown[j]),
            tier=tiers[j], state=state.to_bytes(), change=encode_change(change),
            newcomer=stored[i].state is None))
    return RoundWrites(update.ladder, update.round_id, writes)
