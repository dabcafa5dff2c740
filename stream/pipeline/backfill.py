"""Backfill: rate a history of rounds in process and write into Redis what the stream would have.

``stream backfill`` (docs/history.md "Backfill") loads history at replay speed, without Kafka:
rounds go through the stream's acceptance and registration rule (``first_copies``), each
ladder's rounds are rated in order by the replay's engine path (``rate_round``,
``rate_team_round``; a rating-only model's through ``batch.models.rate_one`` and ``rating_models.apply``) and
written with :class:`stream.store.bulk.LadderWriter`: the same keys, fields and bytes as phase
one and phase two, so the stream continues the ladder's sequence exactly. A ladder with rounds is
refused unless ``append`` (no round in flight; continues from its stored states, seq and tiers).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from stream.batch.dedup import first_copies
from stream.batch.models import rate_one, support as model_support
from stream.batch.table import LadderTable
from stream.contracts import RoundResult
from stream.contracts.round import RoundRejected, check_supported
from stream.engine import rate_round
from stream.engine.ratings import Ratings
from stream.engine.display import UNPLACED, display_rating, is_provisional, league_division, tier_indices, tier_names
from stream.engine.season_schedule import entering
from stream.engine.seasons import season_next_tier
from stream.engine.state import pack_batch, unpack_batch
from stream.engine.teams import rate_team_round
from stream.pipeline import rating_models
from stream.pipeline.context import PipelineContext
from stream.contracts.encoding import ChangeColumns, encode_changes, number_texts
from stream.pipeline.phase_one import build_fanout
from stream.pipeline.teams import fanout_columns
from stream.store.bulk import LadderWriter, content_hashes, ladder_info, stored_players
from stream.store.player_hash import PlayerRows
from stream.store.store import STATUS_NO_OUTCOME, STATUS_RATED, encode_float, fanout_fields


HISTORY_BUFFER = 50_000
"""History entries buffered before they are sent (bounds the backfill's memory)."""


class BackfillRefused(ValueError):
    """The history cannot be written as asked (a ladder with rounds, a conflict with a stored round)."""


@dataclass
class BackfillSummary:
    """What a backfill did (the command's ``--json`` output)."""

    rounds: int = 0
    rated: int = 0
    no_outcome: int = 0
    duplicates: int = 0
    participations: int = 0
    players: int = 0
    ladders: dict[str, int] = field(default_factory=dict)


@dataclass
class _PlayerColumns:
    """Per table row: the seq and index of the player's last round in the backfill (0 / -1: none),
    display rating and tier after it, and the seq of his last round stored before (an append)."""

    last_seq: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    stored_seq: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    last_round: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    shown: np.ndarray = field(default_factory=lambda: np.zeros(0))
    tier: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def reserve(self, n: int) -> None:
        size = len(self.last_seq)
        if n <= size:
            return
        grow = max(n, 2 * size) - size
        for name, fill in (("last_seq", 0), ("stored_seq", 0), ("last_round", -1), ("shown", 0.0), ("tier", UNPLACED)):
            column = getattr(self, name)
            setattr(self, name, np.concatenate([column, np.full(grow, fill, dtype=column.dtype)]))


@dataclass
class _LadderRun:
    """One ladder's backfill in progress: engine table, per-player bookkeeping, counters."""

    name: str
    table: LadderTable
    seq: int
    partitions: int
    stored_fields: dict[str, str]
    """The ladder hash before the backfill."""
    columns: _PlayerColumns = field(default_factory=lambda: _PlayerColumns())
    round_ids: list[str] = field(default_factory=list)
    """The rated rounds' ids, in order (``columns.last_round`` indexes it)."""
    history: dict[str, list[bytes]] = field(default_factory=lambda: defaultdict(list))
    """History entries not yet sent, per player (oldest first)."""
    buffered: int = 0
    new_players: int = 0
    rated: int = 0
    last_rated: tuple[int, str] | None = None
    occurred_max: float | None = None
    """The newest rated round's occurred_at (kept only on a ladder rated by occurred_at)."""


async def plan(ctx: PipelineContext, rounds: Sequence[RoundResult], *, append: bool) -> tuple[list[RoundResult], int]:
    """The rounds to write (first copies, not already stored) and how many were duplicates; raises
    :class:`BackfillRefused` for what the stream would refuse or a ladder it cannot write into."""
    by_time = ctx.ladder_order.by_time
    deduplicated = first_copies(rounds, by_time)
    if deduplicated.conflicts:
        position, rejection = deduplicated.conflicts[0]
        raise BackfillRefused(f"round {position + 1} of the input: {rejection.message}")
    by_ladder: dict[str, list[RoundResult]] = defaultdict(list)
    for round_ in deduplicated.rounds:
        by_ladder[round_.ladder].append(round_)
    keep: set[tuple[str, str]] = set()
    for ladder, ladder_rounds in by_ladder.items():
        info = await ladder_info(ctx.store, ladder)
        cfg = ctx.ladder(ladder)
        support = model_support(cfg.model)
        for round_ in ladder_rounds:  # what the stream would dead-letter (teams_unsupported) is refused
            try:
                check_supported(round_, support, f"model {cfg.model!r} of ladder {ladder!r}")
            except RoundRejected as exc:
                raise BackfillRefused(f"round {round_.round_id!r}: {exc.message}") from None
        stored_model = info.fields.get("model")
        if stored_model and stored_model != cfg.model:
            raise BackfillRefused(f"ladder {ladder!r} rates with model {stored_model!r} but LADDERS gives "
                                  f"{cfg.model!r}: changing a ladder's model is a re-rate; backfill into a fresh ladder")
        if info.rounds and not append:
            raise BackfillRefused(f"ladder {ladder!r} already has {info.rounds} rounds (use --append to add to it)")
        if (why := info.held(ladder, "try again once it is done")) is not None:
            raise BackfillRefused(why)
        newest = info.fields.get("occurred_max")
        if by_time(ladder) and newest is not None and any(r.occurred_at < float(newest) for r in ladder_rounds):
            raise BackfillRefused(f"ladder {ladder!r} is rated in occurred_at order and the input has rounds older "
                                  f"than its newest round ({newest}): publish them to the stream, which inserts "
                                  "late rounds in their place")
        if info.in_flight:
            raise BackfillRefused(f"ladder {ladder!r} has {info.in_flight} rounds being rated: stop its workers "
                                  "and let them drain before appending")
        stored = await content_hashes(ctx.store, ladder, [r.round_id for r in ladder_rounds]) if info.rounds else []
        for round_, digest in zip(ladder_rounds, stored or [None] * len(ladder_rounds)):
            if digest is None:
                keep.add((ladder, round_.round_id))
            elif digest != round_.content_hash():
                raise BackfillRefused(f"round {round_.round_id!r} of ladder {ladder!r} is already stored with "
                                      "different content; the stored round stands")
    todo = [r for r in deduplicated.rounds if (r.ladder, r.round_id) in keep]
    return todo, len(rounds) - len(todo)


async def backfill(ctx: PipelineContext, rounds: Sequence[RoundResult], *, append: bool = False,
                   on_round: Callable[[RoundResult], None] | None = None) -> BackfillSummary:
    """Write the rating history of ``rounds`` into Redis as the stream would (module docstring)."""
    await ctx.refresh_seasons(force=True)  # the seasons started on the service (stream season start)
    todo, skipped = await plan(ctx, rounds, append=append)
    summary = BackfillSummary(rounds=len(rounds), duplicates=skipped)
    writer = LadderWriter(ctx.store)
    runs: dict[str, _LadderRun] = {}
    now = time.time()
    for round_ in todo:
        run = runs.get(round_.ladder)
        if run is None:
            run = runs[round_.ladder] = await _start(ctx, round_.ladder, [r for r in todo if r.ladder == round_.ladder])
            await writer.add_ladder(round_.ladder)
        run.seq += 1
        if round_.is_outcome_free(ctx.ladder(round_.ladder).draws_rate):
            await writer.round(run.name, round_.round_id, run.seq, _record(round_, run.seq, STATUS_NO_OUTCOME, now))
            summary.no_outcome += 1
        else:
            await _rate(ctx, writer, run, round_, now)
            run.occurred_max = max(run.occurred_max or -math.inf, round_.occurred_at)
            summary.rated += 1
            summary.participations += round_.field_size
        summary.ladders[run.name] = summary.ladders.get(run.name, 0) + 1
        if on_round is not None:
            on_round(round_)
    for run in runs.values():
        summary.players += await _finish(ctx, writer, run, now)
    await writer.close()
    return summary


async def _start(ctx: PipelineContext, ladder: str, ladder_rounds: list[RoundResult]) -> _LadderRun:
    """A ladder's run, seeded with the stored state of its players who appear in the backfill."""
    info = await ladder_info(ctx.store, ladder)
    run = _LadderRun(ladder, LadderTable(ctx.ladder(ladder).newcomer), info.seq, await ctx.outbox.partition_count(),
                     info.fields)
    if info.fields.get("occurred_max") is not None:  # an append keeps the ladder's newest occurred_at
        run.occurred_max = float(info.fields["occurred_max"])
    if not info.rounds:
        return run
    players = sorted({p for r in ladder_rounds for p in r.players()})
    stored = await stored_players(ctx.store, ladder, players)
    present = [i for i, state in enumerate(stored.states) if state is not None]
    if present:
        names = [players[i] for i in present]
        rows = run.table.rows(names)
        run.table.scatter(rows, unpack_batch([stored.states[i] for i in present], run.table.params))
        run.columns.reserve(run.table.size)
        run.columns.tier[rows] = tier_indices([stored.tiers[i] for i in present], ctx.display(ladder))
        run.columns.stored_seq[rows] = [stored.last_seq[i] for i in present]
    return run


def _record(round_: RoundResult, seq: int, status: str, now: float) -> dict[str | bytes, str | int]:
    """The round record register_round.lua writes (and, for a rated round, what follows it)."""
    record: dict[str | bytes, str | int] = {
        "round_id": round_.round_id, "seq": seq, "status": status, "field_size": round_.field_size,
        "occurred_at": encode_float(round_.occurred_at), "received_at": encode_float(now),
        "content_hash": round_.content_hash()}
    if math.isfinite(round_.perf_ceiling):  # kept for re-rates, as register_round.lua keeps it
        record["perf_ceiling"] = encode_float(round_.perf_ceiling)
    if status == STATUS_RATED:
        record.update({"pending": 0, "rated_at": encode_float(now), "emitted": "1"})
    return record


async def _rate(ctx: PipelineContext, writer: LadderWriter, run: _LadderRun, round_: RoundResult, now: float) -> None:
    """Rate one round (replay's engine path) and queue its writes (phase one's and phase two's)."""
    players = round_.players()
    ranks = round_.ranks()
    known = run.table.size
    rows = run.table.rows(players)
    run.new_players += run.table.size - known
    run.columns.reserve(run.table.size)
    before = run.table.gather(rows)
    rating = ctx.ladder(run.name)
    teams, shares = fanout_columns(round_)  # None, None for a plain round
    if rating.rating_model is None:
        if shares is None:
            update = rate_round(before, ranks, run.table.params, weight=round_.weight,
                                perf_ceiling=round_.perf_ceiling, time=round_.occurred_at)
        else:  # teams or partial play: Elo-MMR for teams, as the stream rates them
            entry, entry_ranks = round_.entries()
            update = rate_team_round(before, entry, entry_ranks, round_.player_weights(), run.table.params,
                                     weight=round_.weight, perf_ceiling=round_.perf_ceiling, time=round_.occurred_at)
        after, performance = update.after, update.performance
        performance_texts = number_texts("performance", performance)
    else:  # phase one's call and phase two's state (rating_models), as the stream rates the round
        modelled = rate_one(rating.rating_model, rating.model_params,
                            Ratings(before.mu, before.sigma, before.rounds), round_)
        after = rating_models.apply(before, modelled.after.mu, modelled.after.sigma,
                                    np.full(len(players), round_.occurred_at))
        performance = after.mu if modelled.performance is None else modelled.performance
        performance_texts = number_texts("performance", performance) if rating.rating_model.performs \
            else ["null"] * len(players)
    run.table.scatter(rows, after)
    cfg = ctx.display(run.name)
    mu, sigma = number_texts("mu_after", after.mu), number_texts("sigma_after", after.sigma)
    shown_values = display_rating(after.mu, after.sigma, cfg)
    shown = number_texts("display_rating", shown_values)
    seasons = rating.seasons
    starting = np.zeros(len(players), dtype=bool) if seasons is None else \
        entering(before.last_time, np.full(len(players), round_.occurred_at), seasons)
    tier = season_next_tier(run.columns.tier[rows], starting, after.mu, after.sigma, cfg, seasons)
    tiers = tier_names(tier, cfg)
    changes = encode_changes(ChangeColumns(
        ladder=run.name, round_id=round_.round_id, field_size=round_.field_size, occurred_at=round_.occurred_at,
        players=players, ranks=ranks.tolist(), performance=performance_texts,
        mu_before=number_texts("mu_before", before.mu), sigma_before=number_texts("sigma_before", before.sigma),
        mu_after=mu, sigma_after=sigma, display_rating=shown, tiers=tiers, rounds_played=after.rounds.tolist(),
        placement=partial(league_division, cfg=cfg), teams=teams, weights=None if shares is None else number_texts("weight", np.asarray(shares)),
        provisional=is_provisional(after.sigma, after.rounds, cfg).tolist()))
    last = run.columns.last_seq[rows]
    previous = np.where(last > 0, last, run.columns.stored_seq[rows]).tolist()  # entries' previous_seq, as the stream
    fanout = build_fanout(ctx, round_, run.seq, performance, run.partitions, previous,
                          None if rating.rating_model is None else (mu, sigma))  # a model's entries carry the rating

    await writer.round(run.name, round_.round_id, run.seq, _record(round_, run.seq, STATUS_RATED, now),
                       results=dict(zip(players, changes)),
                       fanout=dict(fanout_fields([(m.partition, m.value) for m in fanout])))
    for player, change in zip(players, changes):
        run.history[player].append(change)
    run.buffered += len(players)
    if run.buffered >= HISTORY_BUFFER:
        await _flush_history(ctx, writer, run)
    run.columns.tier[rows] = tier
    run.columns.shown[rows] = shown_values
    run.columns.last_seq[rows] = run.seq
    run.columns.last_round[rows] = len(run.round_ids)
    run.round_ids.append(round_.round_id)
    run.rated += 1
    run.last_rated = (run.seq, round_.round_id)


async def _flush_history(ctx: PipelineContext, writer: LadderWriter, run: _LadderRun) -> None:
    await writer.push_history(run.name, run.history)
    run.history.clear()
    run.buffered = 0


async def _finish(ctx: PipelineContext, writer: LadderWriter, run: _LadderRun, now: float) -> int:
    """Queue the rest of the history, the final player hashes, the leaderboard and the ladder's
    counters; returns the number of players written."""
    await _flush_history(ctx, writer, run)
    c = run.columns
    rows = np.flatnonzero(c.last_seq[:run.table.size] > 0)  # the players this backfill rated
    if len(rows):
        names = [run.table.names[i] for i in rows.tolist()]
        batch = run.table.gather(rows)
        seqs = c.last_seq[rows].tolist()
        shown = number_texts("display_rating", c.shown[rows])
        await writer.players(run.name, names, PlayerRows(
            seq=seqs, mu=number_texts("mu", batch.mu), sigma=number_texts("sigma", batch.sigma),
            rounds=batch.rounds.tolist(), last_round=[run.round_ids[i] for i in c.last_round[rows].tolist()],
            last_time=number_texts("last_time", batch.last_time), display_rating=shown,
            tier=tier_names(c.tier[rows], ctx.display(run.name)), state=pack_batch(batch)))
    fields: dict[str | bytes, str | int] = {"seq": run.seq}
    if run.rated and not run.stored_fields.get("model"):  # fixed from its first rated round, as register_round.lua
        cfg = ctx.ladder(run.name)
        fields.update({"model": cfg.model, "model_params": cfg.digest})
    if run.new_players:
        fields["players"] = int(run.stored_fields.get("players", 0)) + run.new_players
    if run.occurred_max is not None:  # what register_round.lua keeps: the newest occurred_at rated
        fields["occurred_max"] = encode_float(run.occurred_max)
    if run.last_rated is not None:  # what record_round_results.lua sets when a round becomes rated
        fields.update({"rounds_rated": int(run.stored_fields.get("rounds_rated", 0)) + run.rated,
                       "last_rated_seq": run.last_rated[0], "last_round": run.last_rated[1],
                       "updated_at": encode_float(now)})
    await writer.ladder_fields(run.name, fields)
    return len(rows)
