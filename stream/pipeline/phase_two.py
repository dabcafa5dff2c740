"""Phase two: apply a batch of ``player-updates`` messages to the players' stored beliefs, then emit events.

Plain async function (no Kafka), docs/design.md step 5: every section (one PlayerUpdate) must be
byte for byte one phase one stored (else ``PhaseTwoResult.unverified``, dead-lettered); the
players' states are read ONCE per batch; the rows (player, round) follow the chain rule
(``chains.py``), one ``engine.phase_two`` call per wave (paper Algorithm 2 diffusion + Algorithm
3 update, Eq. 8 sigma; per-row weight and time); two round trips write the batch
(``Store.apply_batch``). A row already applied is not recomputed: its event is re-emitted from
the stored results (same ``event_id``), unless a correction re-rated the round since. A gap row
(its ``previous_seq`` not reached) is left pending for the sweeper.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TypeVar

import numpy as np

from stream import engine
from stream.contracts import PlayerUpdate
from stream.contracts.correction import Correction
from stream.engine.display import display_rating, is_provisional, league_division, tier_indices, tier_names
from stream.engine.season_schedule import entering
from stream.engine.seasons import season_next_tier
from stream.engine.state import pack_batch, unpack_batch
from stream.logsafe import log_safe
from stream.pipeline import faults, rating_models
from stream.pipeline.chains import APPLY, DONE, GAP, NO_PREVIOUS, ChainPlan, plan_chains
from stream.engine.ladders import LadderConfig
from stream.pipeline.context import PipelineContext
from stream.contracts.encoding import ChangeColumns, columns_texts, encode_changes_of_rounds, number_texts
from stream.pipeline.messages import RatingChangeMessage, split_sections
from stream.store.store import VERIFY_RAW_MAX, BatchWrites, FanOutCheck, StoredStates

log = logging.getLogger(__name__)

_T = TypeVar("_T")


class _Round:
    """One round met in a batch: its verified sections' entries, each player once, as ``parts``.
    A slotted class, not a dataclass: one is built per round (default factories cost more)."""

    __slots__ = ("update", "parts", "seen")

    def __init__(self, update: PlayerUpdate) -> None:
        self.update = update
        self.parts: list[PlayerUpdate] = []
        self.seen: set[str] = set()

    def add(self, update: PlayerUpdate) -> None:
        fresh = set(update.players)
        if len(fresh) == len(update.players) and self.seen.isdisjoint(fresh):  # the usual section
            self.seen |= fresh
            self.parts.append(update)
            return
        keep = []
        for i, player in enumerate(update.players):
            if player not in self.seen:
                self.seen.add(player)
                keep.append(i)
        if keep:
            self.parts.append(_entries(update, keep))

    @property
    def size(self) -> int:
        return len(self.seen)


def _entries(update: PlayerUpdate, keep: Sequence[int]) -> PlayerUpdate:
    """``update`` with the entries ``keep`` only."""
    def take(values: Sequence[_T] | None) -> list[_T] | None:
        return None if values is None else [values[i] for i in keep]

    return replace(update, players=[update.players[i] for i in keep], ranks=[update.ranks[i] for i in keep],
                   performances=[update.performances[i] for i in keep], previous_seqs=take(update.previous_seqs),
                   mu_after=take(update.mu_after), sigma_after=take(update.sigma_after), teams=take(update.teams),
                   weights=take(update.weights))


@dataclass
class PhaseTwoResult:
    """Events to emit, and counts for metrics."""

    events: list[RatingChangeMessage]
    applied: int
    replayed: int
    emitted: list[tuple[str, str, list[str]]] = field(default_factory=list)
    """(ladder, round_id, players) whose events are in ``events``, per round of the batch."""
    unverified: list[tuple[int, str]] = field(default_factory=list)
    """(message index, why) of every section not in its round's stored fan-out (not applied)."""
    unverified_sections: list[bytes] = field(default_factory=list)
    """The bytes of each ``unverified`` section (aligned): what its dead letter holds."""
    gaps: int = 0
    """Rows not applied because the player's earlier round (its ``previous_seq``) is not applied yet."""
    repairs: list[Correction] = field(default_factory=list)
    """Voids of the rounds phase two gave up on, to publish (``updates_batches.release_update``)."""


def group_updates(updates: Sequence[PlayerUpdate]) -> list[_Round]:
    """Merge PlayerUpdates per (ladder, round_id), each player once; rounds in (ladder, seq)
    order, the order a player's rounds must be written in."""
    rounds: dict[tuple[str, str], _Round] = {}
    for update in updates:
        key = (update.ladder, update.round_id)
        if key not in rounds:
            rounds[key] = _Round(update)
        rounds[key].add(update)
    return sorted(rounds.values(), key=lambda r: (r.update.ladder, r.update.seq))


def fanout_checks(updates: Sequence[PlayerUpdate], raws: Sequence[bytes]) -> tuple[list[FanOutCheck], list[list[int]]]:
    """One check per round of the batch, and each check's section indices: a small round's sections
    as they are (:data:`VERIFY_RAW_MAX`), a bigger round's by SHA-1 digest."""
    by_round: dict[tuple[str, str], list[int]] = {}
    for i, update in enumerate(updates):
        by_round.setdefault((update.ladder, update.round_id), []).append(i)
    checks = [FanOutCheck(ladder, round_id, [raws[i] for i in index], True)
              if all([updates[i].field_size <= VERIFY_RAW_MAX for i in index]) else
              FanOutCheck(ladder, round_id, [hashlib.sha1(raws[i]).hexdigest() for i in index])
              for (ladder, round_id), index in by_round.items()]
    return checks, list(by_round.values())


@dataclass(frozen=True)
class _Sections:
    """A batch's messages cut into sections: each one's bytes, PlayerUpdate and message index."""

    raws: list[bytes]
    updates: list[PlayerUpdate]
    message: list[int]

    @classmethod
    def parse(cls, messages: Sequence[bytes]) -> _Sections:
        cut = [(i, section) for i, value in enumerate(messages) for section in split_sections(value)]
        raws = [section for _, section in cut]
        return cls(raws, [PlayerUpdate.from_json(raw) for raw in raws], [i for i, _ in cut])

    def unverified(self, stored: StoredStates, where: list[list[int]]) -> list[int]:
        """Indices of the sections their check did not find in the stored fan-out, ascending."""
        return sorted(i for flags, index in zip(stored.verified, where) for flag, i in zip(flags, index) if not flag)

    def why(self, i: int) -> str:
        update = self.updates[i]
        return (f"not a section of the stored fan-out of round {log_safe(update.round_id)} of ladder "
                f"{log_safe(update.ladder)} (claims seq {update.seq}): not applied")


@dataclass(frozen=True)
class _Rows:
    """Every (player, round) row of the batch's verified rounds as columns, round after round;
    ``key`` indexes the loaded states (one per distinct (ladder, player))."""

    rounds: list[_Round]
    starts: np.ndarray
    """Row offset of each round (and the total at the end)."""
    key: np.ndarray
    seq: np.ndarray
    previous: np.ndarray
    performance: np.ndarray
    mu_after: np.ndarray
    sigma_after: np.ndarray
    """A rating-only model's new rating carried by the fan-out (NaN for Elo-MMR rows)."""
    weight: np.ndarray
    """The round's weight times the player's share of the match played (``stream.engine.teams``)."""
    time: np.ndarray
    players: list[str]
    ranks: list[int]
    teams: list[str | None]
    shares: list[float | None]
    """Each row's team and share played as its entry gave them (None: a plain round's entry)."""
    ladder: np.ndarray
    """Index of the row's ladder in ``ladders``."""
    ladders: list[str]

    @classmethod
    def of(cls, rounds: list[_Round], key_of: dict[tuple[str, str], int]) -> _Rows:
        sizes = [r.size for r in rounds]
        n = sum(sizes)
        parts = [u for r in rounds for u in r.parts]
        ladders = list(dict.fromkeys(r.update.ladder for r in rounds))
        index = {name: i for i, name in enumerate(ladders)}
        players = [p for u in parts for p in u.players]
        plain = all(u.weights is None for u in parts)
        shares: list[float | None] = [None] * n if plain else [w for u in parts for w in _or_none(u.weights, len(u.players))]
        share = None if plain else np.fromiter((1.0 if w is None else w for w in shares), dtype=np.float64, count=n)
        weight = np.repeat(np.array([r.update.weight for r in rounds], dtype=np.float64), sizes)
        ladder_of = [r.update.ladder for r, size in zip(rounds, sizes) for _ in range(size)]
        key = np.fromiter(map(key_of.__getitem__, zip(ladder_of, players)), dtype=np.int64, count=n)
        return cls(
            rounds=rounds, starts=np.cumsum([0, *sizes]), key=key,
            seq=np.repeat(np.array([r.update.seq for r in rounds], dtype=np.int64), sizes),
            previous=np.fromiter([q for u in parts for q in (u.previous_seqs or [NO_PREVIOUS] * len(u.players))],
                                 dtype=np.int64, count=n),
            performance=np.fromiter([x for u in parts for x in u.performances], dtype=np.float64, count=n),
            mu_after=_floats(parts, n, "mu_after"), sigma_after=_floats(parts, n, "sigma_after"),
            weight=weight if share is None else weight * share,
            time=np.repeat(np.array([r.update.occurred_at for r in rounds], dtype=np.float64), sizes),
            players=players, ranks=[rank for u in parts for rank in u.ranks],
            teams=[None] * n if all(u.teams is None for u in parts) else
            [t for u in parts for t in _or_none(u.teams, len(u.players))], shares=shares,
            ladder=np.repeat(np.array([index[r.update.ladder] for r in rounds], dtype=np.int64), sizes),
            ladders=ladders)


def _or_none(values: Sequence[_T] | None, entries: int) -> Sequence[_T | None]:
    """A section's column ``values`` of its ``entries`` entries, or None per entry where it has none."""
    return [None] * entries if values is None else values


def _floats(parts: Sequence[PlayerUpdate], n: int, name: str) -> np.ndarray:
    """The column ``name`` (``mu_after`` or ``sigma_after``) of the parts' entries, NaN where absent."""
    columns = [getattr(u, name) for u in parts]
    if all(column is None for column in columns):
        return np.full(n, np.nan)
    return np.array([math.nan if x is None else x
                     for u, column in zip(parts, columns) for x in _or_none(column, len(u.players))], dtype=np.float64)


async def _load(ctx: PipelineContext, messages: Sequence[bytes],
                verify: bool) -> tuple[_Rows, StoredStates, _Sections, list[int]]:
    """The batch's verified rounds as rows, its players' stored states (one round trip, with the
    fan-out check), its sections and the unverified ones."""
    sections = _Sections.parse(messages)
    key_of: dict[tuple[str, str], int] = {}
    for update in sections.updates:
        ladder = update.ladder
        for player in update.players:
            key_of.setdefault((ladder, player), len(key_of))
    checks, where = fanout_checks(sections.updates, sections.raws) if verify else ([], [])
    stored = await ctx.store.load_states(list(key_of), checks)
    unverified = sections.unverified(stored, where)
    dropped = set(unverified)
    rounds = group_updates([u for i, u in enumerate(sections.updates) if i not in dropped])
    return _Rows.of(rounds, key_of), stored, sections, unverified


async def handle_updates(ctx: PipelineContext, messages: Sequence[bytes], *, verify: bool = True) -> PhaseTwoResult:
    """Phase two of a batch of ``player-updates`` messages (see the module docstring).
    ``verify=False`` skips the fan-out check (bench/handlers.py measures its cost)."""
    await ctx.refresh_seasons()  # the seasons started since (SEASON_REFRESH_S)
    rows, stored, sections, unverified = await _load(ctx, messages, verify)
    await faults.at(faults.RAISE_ALWAYS_IN_PHASE_TWO, rounds=[round_.update.round_id for round_ in rows.rounds])
    plan = plan_chains(rows.key, rows.seq, rows.previous, stored.last_seq)
    now = time.time()
    writes = _rate(ctx, rows, plan, stored)
    applied = await ctx.store.apply_batch(writes, now=now) if rows.rounds else np.zeros(0, dtype=bool)
    result = PhaseTwoResult([], 0, 0, unverified=[(sections.message[i], sections.why(i)) for i in unverified],
                            unverified_sections=[sections.raws[i] for i in unverified])
    missing = _collect_applied(result, rows, plan, writes, applied)
    await _re_emit(ctx, result, missing, now)
    result.gaps = int(np.count_nonzero(plan.status == GAP))
    if result.gaps:
        log.info("phase two: %d row(s) wait for an earlier round of their player (gap): not applied, their "
                 "round(s) stay pending", result.gaps)
    return result


def _collect_applied(result: PhaseTwoResult, rows: _Rows, plan: ChainPlan, writes: BatchWrites,
                     applied: np.ndarray) -> list[tuple[str, str, list[str]]]:
    """Put the events of the rows applied now (``applied``: a flag per write) into ``result``;
    return, per round, the players whose stored result must be re-emitted (already applied, or
    applied by someone else since)."""
    players, starts = writes.players, writes.starts
    sent: list[str]
    if applied.all():  # the usual batch: every write applied now
        sent, changes, cuts = list(players), writes.changes, starts
    else:
        kept = np.flatnonzero(applied)
        index = kept.tolist()
        sent, changes = [players[i] for i in index], [writes.changes[i] for i in index]
        cuts = np.searchsorted(kept, starts).tolist()
    result.applied += len(sent)
    result.events += [RatingChangeMessage(player.encode(), change) for player, change in zip(sent, changes)]
    again: dict[int, list[str]] = {}  # round -> its players to re-emit: skipped writes, then rows done before
    done = plan.status == DONE
    if len(sent) < len(players) or done.any():  # not the usual batch (every row applied now)
        for starts_, players_, re_emit in ((writes.starts, players, np.flatnonzero(~applied)),
                                           (rows.starts, rows.players, np.flatnonzero(done))):
            for i, row in zip((np.searchsorted(starts_, re_emit, side="right") - 1).tolist(), re_emit.tolist()):
                again.setdefault(i, []).append(players_[row])
    missing: list[tuple[str, str, list[str]]] = []
    for i, (ladder, round_id) in enumerate(zip(writes.ladders, writes.round_ids)):
        result.emitted.append((ladder, round_id, sent[cuts[i]:cuts[i + 1]]))
        missing.append((ladder, round_id, again.get(i, [])))
    return missing


async def _re_emit(ctx: PipelineContext, result: PhaseTwoResult, missing: list[tuple[str, str, list[str]]],
                   now: float) -> None:
    """Re-emit the stored results of rows already applied (one round trip); a result lost by a
    crash is recovered from the player's history."""
    if not any(players for _, _, players in missing):
        return
    for (ladder, round_id, players), changes, emitted in zip(
            missing, await ctx.store.load_results_of(missing), result.emitted):
        if changes is None:  # a correction re-rated the round after its events were sent: nothing to re-emit
            continue
        lost = [p for p, change in zip(players, changes) if change is None]
        if lost:  # applied, but the round's bookkeeping never ran (a crash mid-pipeline): recover it
            recovered = dict(zip(lost, await ctx.store.recover_results(ladder, round_id, lost, now=now)))
            changes = [recovered[p] if change is None else change for p, change in zip(players, changes)]
        for player, change in zip(players, changes):
            if change is not None:
                result.events.append(RatingChangeMessage(player.encode(), change))
                emitted[2].append(player)
                result.replayed += 1


@dataclass
class _Rated:
    """The applied rows' new states as columns, aligned with ``rows`` (applied row indices, ascending)."""

    rows: np.ndarray
    mu_before: np.ndarray
    sigma_before: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray
    rounds: np.ndarray
    shown: np.ndarray
    """Display rating (by the row's ladder's display config)."""
    states: np.ndarray
    tiers: np.ndarray
    newcomer: np.ndarray
    no_performance: np.ndarray
    """Rows of a model without a performance (their RatingChange says ``performance: null``)."""
    provisional: np.ndarray
    """Provisional after the row's update (``engine.display.is_provisional``, the row's ladder's rule)."""

    @classmethod
    def empty(cls, rows: np.ndarray) -> _Rated:
        n = len(rows)
        return cls(rows, mu_before=np.zeros(n), sigma_before=np.zeros(n), mu=np.zeros(n), sigma=np.zeros(n),
                   rounds=np.zeros(n, dtype=np.int64), shown=np.zeros(n), states=np.empty(n, dtype=object),
                   tiers=np.empty(n, dtype=object), newcomer=np.zeros(n, dtype=bool),
                   no_performance=np.zeros(n, dtype=bool), provisional=np.zeros(n, dtype=bool))


def _rate(ctx: PipelineContext, rows: _Rows, plan: ChainPlan, stored: StoredStates) -> BatchWrites:
    """New states of every row to apply, one engine call per wave (a player's k-th row in wave k),
    as the batch's writes: every round in order (one with no row applied too)."""
    waves = plan.waves()
    rated = _Rated.empty(np.flatnonzero(plan.status == APPLY))
    if len(rated.rows):
        # per player (a newcomer: his ladder model's prior); each wave moves its rows' players
        current = unpack_batch(stored.states, ctx.ladder(rows.ladders[0]).newcomer)
        _newcomers(ctx, rows, stored.states, current)  # the other ladders' newcomers
        tiers = np.array(stored.tiers, dtype=object)
        fresh = np.fromiter((state is None for state in stored.states), dtype=bool, count=len(stored.states))
        for k, wave in enumerate(waves):
            _rate_wave(ctx, rows, wave, np.searchsorted(rated.rows, wave), current, tiers, fresh, rated,
                       last=k == len(waves) - 1)
    cuts = np.searchsorted(rated.rows, rows.starts).tolist()
    texts = _Texts.of(rated, rows)
    updates = [round_.update for round_ in rows.rounds]
    return BatchWrites(
        ladders=[u.ladder for u in updates], round_ids=[u.round_id for u in updates], seqs=[u.seq for u in updates],
        last_times=[u.occurred_at for u in updates], starts=cuts, players=texts.players, mu=texts.mu,
        sigma=texts.sigma, rounds=texts.rounds, display_rating=texts.shown, tiers=texts.tiers, states=texts.states,
        changes=_changes(ctx, rows.rounds, texts, cuts), newcomer=rated.newcomer)


def _rate_wave(ctx: PipelineContext, rows: _Rows, wave: np.ndarray, at: np.ndarray, current: engine.PlayerBatch,
               tiers: np.ndarray, fresh: np.ndarray, rated: _Rated, *, last: bool) -> None:
    """Rate the rows ``wave`` (positions ``at`` in ``rated``), one engine call per ladder model (a
    rating-only model's rows take the rating their fan-out carries), and move the players on."""
    ladder = rows.ladder[wave]
    last_time = current.last_time[rows.key[wave]]  # before this wave: whose round starts a new season
    for config, group in _by_model(ctx, rows, ladder):  # one call per model (and parameters) in the wave
        players, row, to = rows.key[wave[group]], wave[group], at[group]
        before = current.take(players)
        rated.mu_before[to], rated.sigma_before[to] = before.mu, before.sigma
        if config.rating_model is not None:  # phase one rated the round: store the rating it carries
            after = rating_models.apply(before, rows.mu_after[row], rows.sigma_after[row], rows.time[row])
            if not config.rating_model.performs:
                rated.no_performance[to] = True
        else:  # ``before`` is this wave's own copy: updated in place
            after = engine.phase_two(before, rows.performance[row], config.elo_mmr, weight=rows.weight[row],
                                     time=rows.time[row], in_place=True)
        if not last:
            current.put(players, after)
        rated.mu[to], rated.sigma[to], rated.rounds[to] = after.mu, after.sigma, after.rounds
        rated.states[to] = pack_batch(after)
    players = rows.key[wave]
    rated.newcomer[at] = fresh[players]
    fresh[players] = False
    parts = [(0, slice(None))] if len(rows.ladders) == 1 else \
        [(index, np.flatnonzero(ladder == index)) for index in np.unique(ladder).tolist()]
    for index, part in parts:  # tiers move with every wave (hysteresis), by the ladder's display config
        cfg = ctx.display(rows.ladders[index])
        mu, sigma = rated.mu[at[part]], rated.sigma[at[part]]
        rated.shown[at[part]] = display_rating(mu, sigma, cfg)
        rated.provisional[at[part]] = is_provisional(sigma, rated.rounds[at[part]], cfg)
        seasons = ctx.ladder(rows.ladders[index]).seasons
        starting = np.zeros(len(mu), dtype=bool) if seasons is None else \
            entering(last_time[part], rows.time[wave[part]], seasons)
        new = tier_names(season_next_tier(tier_indices(tiers[players[part]].tolist(), cfg), starting, mu, sigma, cfg,
                                          seasons), cfg)
        tiers[players[part]] = new
        rated.tiers[at[part]] = new


def _by_model(ctx: PipelineContext, rows: _Rows, ladder: np.ndarray) -> list[tuple[LadderConfig, np.ndarray]]:
    """The wave's rows (positions in it) grouped by their ladder's model and parameters."""
    if len(rows.ladders) == 1:
        return [(ctx.ladder(rows.ladders[0]), np.arange(len(ladder)))]
    groups: dict[object, tuple[LadderConfig, list[np.ndarray]]] = {}
    for index in np.unique(ladder).tolist():
        cfg = ctx.ladder(rows.ladders[index])
        groups.setdefault((cfg.model, cfg.params), (cfg, []))[1].append(np.flatnonzero(ladder == index))
    return [(cfg, np.sort(np.concatenate(parts))) for cfg, parts in groups.values()]


def _newcomers(ctx: PipelineContext, rows: _Rows, states: Sequence[bytes | None], current: engine.PlayerBatch) -> None:
    """Give every newcomer of a ladder whose model's prior differs from the first ladder's that prior."""
    if len(rows.ladders) < 2:
        return
    first = ctx.ladder(rows.ladders[0]).newcomer
    for index, name in enumerate(rows.ladders[1:], start=1):
        prior = ctx.ladder(name).newcomer
        if (prior.mu_noob, prior.sig_noob) == (first.mu_noob, first.sig_noob):
            continue
        keys = np.unique(rows.key[rows.ladder == index])
        keys = keys[[states[k] is None for k in keys.tolist()]]
        if len(keys):
            current.put(keys, unpack_batch([None] * len(keys), prior))


@dataclass(frozen=True)
class _Texts:
    """The applied rows' columns as the exact text stored and emitted, aligned with ``_Rated.rows``."""

    players: list[str]
    ranks: list[int]
    performance: list[str]
    mu_before: list[str]
    sigma_before: list[str]
    mu: list[str]
    sigma: list[str]
    rounds: list[int]
    shown: list[str]
    states: list[bytes]
    tiers: list[str]
    teams: list[str | None]
    weights: list[str | None]
    """The share played as text, None for a plain round's row (its event has no team nor weight)."""
    provisional: list[bool]

    @classmethod
    def of(cls, rated: _Rated, rows: _Rows) -> _Texts:
        if len(rated.rows) == len(rows.players):  # every row applied (the usual batch): the columns as they are
            players, ranks, teams, shares = rows.players, rows.ranks, rows.teams, rows.shares
        else:
            index = rated.rows.tolist()
            players, ranks = [rows.players[i] for i in index], [rows.ranks[i] for i in index]
            teams, shares = [rows.teams[i] for i in index], [rows.shares[i] for i in index]
        if shares.count(None) == len(shares):  # plain rounds only: no weight to write
            weights: list[str | None] = [None] * len(shares)
        else:
            texts = number_texts("weight", np.fromiter((1.0 if w is None else w for w in shares), dtype=np.float64,
                                                       count=len(shares)))
            weights = [None if w is None else text for w, text in zip(shares, texts)]
        performance = rows.performance[rated.rows]
        missing = rated.no_performance.any()
        if missing:
            performance = np.where(rated.no_performance, 0.0, performance)
        perf, mu_before, sigma_before, mu, sigma, shown = columns_texts((
            ("performance", performance), ("mu_before", rated.mu_before), ("sigma_before", rated.sigma_before),
            ("mu_after", rated.mu), ("sigma_after", rated.sigma), ("display_rating", rated.shown)))
        for i in np.flatnonzero(rated.no_performance).tolist() if missing else ():  # a model without one: null
            perf[i] = "null"
        return cls(
            teams=teams, weights=weights, players=players, ranks=ranks,
            performance=perf,
            mu_before=mu_before, sigma_before=sigma_before, mu=mu, sigma=sigma,
            rounds=rated.rounds.tolist(), shown=shown, states=rated.states.tolist(), tiers=rated.tiers.tolist(),
            provisional=rated.provisional.tolist())


def _changes(ctx: PipelineContext, rounds: Sequence[_Round], texts: _Texts, cuts: Sequence[int]) -> list[bytes]:
    """The RatingChange JSON of every applied row (round ``i``'s: ``cuts[i]:cuts[i + 1]``), one
    encoder call per ladder of the batch (its rounds are contiguous: ``group_updates``)."""
    out: list[bytes] = []
    first = 0
    while first < len(rounds):
        ladder = rounds[first].update.ladder
        last = first
        while last + 1 < len(rounds) and rounds[last + 1].update.ladder == ladder:
            last += 1
        lo, hi = cuts[first], cuts[last + 1]
        if hi > lo:
            counts = [b - a for a, b in zip(cuts[first:last + 1], cuts[first + 1:last + 2])]
            run = [r.update for r, size in zip(rounds[first:last + 1], counts) if size]  # rounds with rows
            sizes = [size for size in counts if size]
            weights = texts.weights[lo:hi]
            teamed = any(w is not None for w in weights)  # a round with teams or partial play
            out += encode_changes_of_rounds(
                ladder, [u.round_id for u in run], [u.field_size for u in run], [u.occurred_at for u in run],
                np.repeat(np.arange(len(run)), sizes).tolist(), ChangeColumns(
                    ladder=ladder, round_id=run[0].round_id, field_size=run[0].field_size,
                    occurred_at=run[0].occurred_at, players=texts.players[lo:hi], ranks=texts.ranks[lo:hi],
                    performance=texts.performance[lo:hi], mu_before=texts.mu_before[lo:hi],
                    sigma_before=texts.sigma_before[lo:hi], mu_after=texts.mu[lo:hi], sigma_after=texts.sigma[lo:hi],
                    display_rating=texts.shown[lo:hi], tiers=texts.tiers[lo:hi], rounds_played=texts.rounds[lo:hi],
                    placement=partial(league_division, cfg=ctx.display(ladder)), teams=texts.teams[lo:hi] if teamed else None,
                    weights=weights if teamed else None, provisional=texts.provisional[lo:hi]))
        first = last + 1
    return out
