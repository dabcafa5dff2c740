"""Phase two: apply a batch of PlayerUpdates to the players' stored beliefs, then emit events.

Plain async function (no Kafka): the ``player-updates`` agent hands it a batch of messages.
``engine.phase_two`` runs once, vectorised over the players of every round in the batch (paper
Algorithm 2 diffusion + Algorithm 3 update, Eq. 8 sigma; per-row weight and time); then the
whole batch is written in ONE Redis round trip (``Store.apply``: a script per chunk of players,
one per round).

Trust: ``player-updates`` is an internal topic, but whoever can write to it could forge an
update (any seq, performance or player). Every message must be byte for byte one of the
messages phase one stored for its round (``Store.load_states`` checks their SHA-1 digests in
the same round trip that reads the players); any other is not applied and comes back in
``PhaseTwoResult.unverified`` (the agent dead-letters it, reason ``unverified_player_update``).

Idempotency: a player whose stored ``last_seq`` already reached the round's ``seq`` is not
recomputed (its state has moved on); the script re-checks atomically. Such players' events
are re-emitted from the round's stored results, so a redelivered task re-sends the SAME
RatingChange (same ``event_id`` and content) and consumers can deduplicate; unless a correction
re-rated the round since (its results changed, the correction sent its own events): then nothing
is re-emitted.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from stream import engine
from stream.contracts import PlayerUpdate
from stream.engine.display import display_rating, next_tier, tier_indices, tier_names
from stream.engine.state import pack_batch, unpack_batch
from stream.pipeline import faults
from stream.logsafe import log_safe
from stream.pipeline.context import PipelineContext
from stream.pipeline.encoding import ChangeColumns, encode_changes, number_texts
from stream.pipeline.messages import RatingChangeMessage
from stream.store.store import ColumnWrites, FanOutCheck, StoredStates


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
    unverified: list[tuple[int, str]] = field(default_factory=list)
    """(index in the batch, why) of the messages that are not in their round's stored fan-out
    (nothing of them was applied)."""


def group_updates(updates: Sequence[PlayerUpdate]) -> list[_RoundGroup]:
    """Merge PlayerUpdates per (ladder, round_id), each player once."""
    groups: dict[tuple[str, str], _RoundGroup] = {}
    for update in updates:
        key = (update.ladder, update.round_id)
        if key not in groups:
            groups[key] = _RoundGroup(update)
        groups[key].add(update)
    return list(groups.values())


def fanout_checks(updates: Sequence[PlayerUpdate], raws: Sequence[bytes]) -> tuple[list[FanOutCheck], list[list[int]]]:
    """One check per round of the batch (the SHA-1 of each of its messages), and the batch
    indices of each check's digests."""
    by_round: dict[tuple[str, str], list[int]] = {}
    for i, update in enumerate(updates):
        by_round.setdefault((update.ladder, update.round_id), []).append(i)
    checks = [FanOutCheck(ladder, round_id, [hashlib.sha1(raws[i]).hexdigest() for i in index])
              for (ladder, round_id), index in by_round.items()]
    return checks, list(by_round.values())


def _unverified(updates: Sequence[PlayerUpdate], stored: StoredStates,
                where: list[list[int]]) -> list[tuple[int, str]]:
    """(batch index, why) of every message its check did not find in the stored fan-out."""
    out = []
    for flags, index in zip(stored.verified, where):
        for flag, i in zip(flags, index):
            if not flag:
                update = updates[i]
                out.append((i, f"not a message of the stored fan-out of round {log_safe(update.round_id)} of ladder "
                               f"{log_safe(update.ladder)} (claims seq {update.seq}): not applied"))
    return sorted(out)


async def _load_verified(ctx: PipelineContext, raws: Sequence[bytes],
                         verify: bool) -> tuple[list[_RoundGroup], StoredStates, list[tuple[int, str]]]:
    """The batch's rounds (verified messages only), their players' stored states aligned with
    them, and the unverified messages; one Redis round trip."""
    updates = [PlayerUpdate.from_json(raw) for raw in raws]
    groups = group_updates(updates)
    checks, where = fanout_checks(updates, raws) if verify else ([], [])
    stored = await ctx.store.load_states([(g.update.ladder, p) for g in groups for p in g.players], checks)
    unverified = _unverified(updates, stored, where)
    if unverified:  # rare: regroup without them (a forged message may have come first for a player)
        row = {(g.update.ladder, g.update.round_id, p): i
               for i, (g, p) in enumerate((g, p) for g in groups for p in g.players)}
        dropped = {i for i, _ in unverified}
        groups = group_updates([u for i, u in enumerate(updates) if i not in dropped])
        stored = stored.take([row[(g.update.ladder, g.update.round_id, p)] for g in groups for p in g.players])
    return groups, stored, unverified


async def handle_updates(ctx: PipelineContext, raws: Sequence[bytes], *, verify: bool = True) -> PhaseTwoResult:
    """Phase two of a batch of ``player-updates`` messages (see the module docstring).
    ``verify=False`` skips the fan-out check (bench/handlers.py measures its cost)."""
    groups, stored, unverified = await _load_verified(ctx, raws, verify)
    for group in groups:
        faults.raise_always(ctx.settings, faults.RAISE_ALWAYS_IN_PHASE_TWO, group.update.round_id)
    now = time.time()
    round_writes = _rate(ctx, groups, stored)
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
        changes = await ctx.store.results_to_reemit(writes.ladder, writes.round_id, missing)
        if changes is None:  # a correction re-rated the round after its events were sent: nothing to re-emit
            continue
        lost = [p for p, change in zip(missing, changes) if change is None]
        if lost:  # applied, but the round's bookkeeping never ran (a crash mid-pipeline): recover it
            recovered = dict(zip(lost, await ctx.store.recover_results(writes.ladder, writes.round_id, lost, now=now)))
            changes = [recovered[p] if change is None else change for p, change in zip(missing, changes)]
        for player, change in zip(missing, changes):
            if change is not None:
                events.append(RatingChangeMessage(player.encode(), change))
                emitted_players.append(player)
                replayed += 1
    return PhaseTwoResult(events, applied_count, replayed, emitted, unverified)


@dataclass(frozen=True)
class _Rated:
    """The batch's rated rows (every group's players not yet past its round, group after group)
    as columns; the floats already rendered to their text, once, for the events and for Redis."""

    after: engine.PlayerBatch
    players: list[str]
    ranks: list[int]
    performance: list[str]
    mu_before: list[str]
    sigma_before: list[str]
    mu: list[str]
    sigma: list[str]
    rounds: list[int]
    states: list[bytes]
    stored_tiers: list[bytes | None]
    newcomer: np.ndarray


def _rate(ctx: PipelineContext, groups: Sequence[_RoundGroup], stored: StoredStates) -> list[ColumnWrites]:
    """New states of every group's players not yet past its round, in ONE vectorised engine call
    for the whole batch (per-row weight and time: the engine's per-call cost, not the players,
    dominated batches of small rounds), then one :class:`ColumnWrites` per group (empty for a
    round whose players are all past it). ``stored`` is aligned with the groups' players, group
    after group."""
    starts = np.cumsum([0, *[len(g.players) for g in groups]])
    todo = [start + np.flatnonzero(stored.last_seq[start:start + len(g.players)] < g.update.seq)
            for g, start in zip(groups, starts)]  # rows of `stored` to rate, per group
    counts = [len(rows) for rows in todo]
    if not sum(counts):
        return [_nothing(group.update) for group in groups]
    rated = _rate_rows(ctx, groups, stored, todo, starts)
    writes: list[ColumnWrites] = []
    lo = 0
    for group, count in zip(groups, counts):
        writes.append(_group_writes(ctx, group.update, rated, slice(lo, lo + count)) if count else _nothing(group.update))
        lo += count
    return writes


def _rate_rows(ctx: PipelineContext, groups: Sequence[_RoundGroup], stored: StoredStates, todo: list[np.ndarray],
               starts: np.ndarray) -> _Rated:
    """One engine call for the rows ``todo`` of every group; columns without per-player objects."""
    rows = np.concatenate(todo).tolist()
    local = [(g, rows_ - start) for g, rows_, start in zip(groups, todo, starts)]  # row indices within each group
    before = unpack_batch([stored.states[i] for i in rows], ctx.params)
    performance = np.concatenate([np.asarray(g.performances, dtype=np.float64)[i] for g, i in local])
    counts = [len(i) for _, i in local]
    after = engine.phase_two(before, performance, ctx.params, weight=np.repeat([g.update.weight for g in groups], counts),
                             time=np.repeat([g.update.occurred_at for g in groups], counts))
    return _Rated(
        after=after, players=[g.players[j] for g, i in local for j in i.tolist()],
        ranks=np.concatenate([np.asarray(g.ranks, dtype=np.int64)[i] for g, i in local]).tolist(),
        performance=number_texts("performance", performance), mu_before=number_texts("mu_before", before.mu),
        sigma_before=number_texts("sigma_before", before.sigma), mu=number_texts("mu_after", after.mu),
        sigma=number_texts("sigma_after", after.sigma), rounds=after.rounds.tolist(), states=pack_batch(after),
        stored_tiers=[stored.tiers[i] for i in rows],
        newcomer=np.fromiter((stored.states[i] is None for i in rows), dtype=bool, count=len(rows)))


def _group_writes(ctx: PipelineContext, update: PlayerUpdate, rated: _Rated, cut: slice) -> ColumnWrites:
    """One round's writes and RatingChange events, from its rows ``cut`` of the batch's columns
    (display rating and tier by its ladder's display config)."""
    mu, sigma = rated.after.mu[cut], rated.after.sigma[cut]
    cfg = ctx.display(update.ladder)
    shown = number_texts("display_rating", display_rating(mu, sigma, cfg))
    tiers = tier_names(next_tier(tier_indices(rated.stored_tiers[cut], cfg), mu, sigma, cfg), cfg)
    players, rounds = rated.players[cut], rated.rounds[cut]
    changes = encode_changes(ChangeColumns(
        ladder=update.ladder, round_id=update.round_id, field_size=update.field_size, occurred_at=update.occurred_at,
        players=players, ranks=rated.ranks[cut], performance=rated.performance[cut],
        mu_before=rated.mu_before[cut], sigma_before=rated.sigma_before[cut], mu_after=rated.mu[cut],
        sigma_after=rated.sigma[cut], display_rating=shown, tiers=tiers, rounds_played=rounds))
    return ColumnWrites(
        ladder=update.ladder, round_id=update.round_id, seq=update.seq, last_time=update.occurred_at,
        players=players, mu=rated.mu[cut], sigma=rated.sigma[cut], rounds=rounds, display_rating=shown, tiers=tiers,
        states=rated.states[cut], changes=changes, newcomer=rated.newcomer[cut])


def _nothing(update: PlayerUpdate) -> ColumnWrites:
    """No player of the round left to apply (the round's bookkeeping still runs)."""
    return ColumnWrites(ladder=update.ladder, round_id=update.round_id, seq=update.seq, last_time=update.occurred_at,
                        players=[], mu=[], sigma=[], rounds=[], display_rating=[], tiers=[], states=[], changes=[],
                        newcomer=np.zeros(0, dtype=bool))
