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

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from stream import engine
from stream.contracts import PlayerUpdate
from stream.engine.display import display_rating, next_tier, tier_indices, tier_names
from stream.engine.state import pack_batch, unpack_batch
from stream.pipeline.context import PipelineContext
from stream.pipeline.encoding import ChangeColumns, encode_changes, number_texts
from stream.pipeline.messages import RatingChangeMessage
from stream.store.store import ColumnWrites, StoredStates


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
    emitted: list[tuple[str, str, list[str]]] = field(default_factory=list)
    """(ladder, round_id, players) whose events are in ``events``, per round of the batch."""


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
    round_writes: list[ColumnWrites] = []
    offset = 0
    for group in groups:
        end = offset + len(group.players)
        round_writes.append(_rate(ctx, group, StoredStates(stored.last_seq[offset:end], stored.states[offset:end],
                                                           stored.tiers[offset:end])))
        offset = end
    applied = await ctx.store.apply(round_writes, now=now) if round_writes else []

    events: list[RatingChangeMessage] = []
    replay_needed: list[tuple[ColumnWrites, list[str], list[str]]] = []
    emitted: list[tuple[str, str, list[str]]] = []
    applied_count = 0
    for group, writes, flags in zip(groups, round_writes, applied):
        done_now = [(player, change) for player, change, ok in zip(writes.players, writes.changes, flags) if ok]
        applied_count += len(done_now)
        events += [RatingChangeMessage(player.encode(), change) for player, change in done_now]
        emitted.append((writes.ladder, writes.round_id, [player for player, _ in done_now]))
        if len(done_now) < len(group.players):
            done = {player for player, _ in done_now}
            replay_needed.append((writes, [p for p in group.players if p not in done], emitted[-1][2]))
    replayed = 0
    for writes, missing, emitted_players in replay_needed:
        changes = await ctx.store.load_results(writes.ladder, writes.round_id, missing)
        lost = [p for p, change in zip(missing, changes) if change is None]
        if lost:  # applied, but the round's bookkeeping never ran (a crash mid-pipeline): recover it
            recovered = dict(zip(lost, await ctx.store.recover_results(writes.ladder, writes.round_id, lost, now=now)))
            changes = [recovered[p] if change is None else change for p, change in zip(missing, changes)]
        for player, change in zip(missing, changes):
            if change is not None:
                events.append(RatingChangeMessage(player.encode(), change))
                emitted_players.append(player)
                replayed += 1
    return PhaseTwoResult(events, applied_count, replayed, emitted)


def _rate(ctx: PipelineContext, group: _RoundGroup, stored: StoredStates) -> ColumnWrites:
    """New states of the group's players not yet past this round: one vectorised engine call,
    packed states and events built from the batch's arrays (no per-player objects); every
    float is rendered to text once, for the event and for Redis."""
    update = group.update
    todo = np.flatnonzero(stored.last_seq < update.seq)
    rows = todo.tolist()
    if not rows:
        return _nothing(update)
    players = [group.players[i] for i in rows]
    before = unpack_batch([stored.states[i] for i in rows], ctx.params)
    performance = np.asarray(group.performances, dtype=np.float64)[todo]
    after = engine.phase_two(before, performance, ctx.params, weight=update.weight, time=update.occurred_at)
    cfg = ctx.display(update.ladder)
    shown = display_rating(after.mu, after.sigma, cfg)
    tiers = tier_names(next_tier(tier_indices([stored.tiers[i] for i in rows], cfg), after.mu, after.sigma, cfg), cfg)
    mu, sigma, shown_text = number_texts("mu_after", after.mu), number_texts("sigma_after", after.sigma), \
        number_texts("display_rating", shown)
    rounds = after.rounds.tolist()
    changes = encode_changes(ChangeColumns(
        ladder=update.ladder, round_id=update.round_id, field_size=update.field_size,
        occurred_at=update.occurred_at, players=players, ranks=np.asarray(group.ranks, dtype=np.int64)[todo].tolist(),
        performance=number_texts("performance", performance), mu_before=number_texts("mu_before", before.mu),
        sigma_before=number_texts("sigma_before", before.sigma), mu_after=mu, sigma_after=sigma,
        display_rating=shown_text, tiers=tiers, rounds_played=rounds))
    return ColumnWrites(
        ladder=update.ladder, round_id=update.round_id, seq=update.seq, last_time=update.occurred_at,
        players=players, mu=mu, sigma=sigma, rounds=rounds, display_rating=shown_text, tiers=tiers,
        states=pack_batch(after), changes=changes,
        newcomer=np.fromiter((stored.states[i] is None for i in rows), dtype=bool, count=len(rows)))


def _nothing(update: PlayerUpdate) -> ColumnWrites:
    """No player of the round left to apply (the round's bookkeeping still runs)."""
    return ColumnWrites(ladder=update.ladder, round_id=update.round_id, seq=update.seq, last_time=update.occurred_at,
                        players=[], mu=[], sigma=[], rounds=[], display_rating=[], tiers=[], states=[], changes=[],
                        newcomer=np.zeros(0, dtype=bool))
