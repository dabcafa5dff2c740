"""Backfill: rate a history of rounds in process and write into Redis what the stream would have.

``stream backfill`` loads years of history at replay speed, without Kafka. Rounds go through
the stream's acceptance (``parse_round``, by the input readers) and registration rule
(``first_copies``: a re-published round is a no-op, an id re-used with other content is a
``conflict``); each ladder's rounds are then rated in order with the replay's engine path
(``rate_round`` on a :class:`LadderTable`, the reference the stream equals) and written with
:class:`stream.store.bulk.BulkWriter`: the same keys, fields and bytes as phase one and phase two
(round record ``rated`` with its events marked emitted, results, stored fan-out, history,
player hash with ``last_seq = queued_seq`` = the player's last round, leaderboard, ladder
counters and ``seq``), so the stream continues the ladder's sequence exactly.

A ladder that already has rounds is refused unless ``append``; appending needs a ladder with no
round in flight (no worker rating it) and continues from its stored states, seq and tiers.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from stream.batch.dedup import first_copies
from stream.batch.table import LadderTable
from stream.contracts import RoundResult
from stream.engine import rate_round
from stream.engine.display import display_rating, next_tier, tier_indices, tier_names
from stream.engine.state import pack_batch, unpack_batch
from stream.pipeline.context import PipelineContext
from stream.pipeline.encoding import ChangeColumns, encode_changes, number_texts
from stream.pipeline.phase_one import build_fanout
from stream.store import keys
from stream.store.bulk import BulkWriter, content_hashes, ladder_info, stored_players
from stream.store.store import STATUS_NO_OUTCOME, STATUS_RATED, encode_float


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
class _LadderRun:
    """One ladder's backfill in progress: engine table, per-player bookkeeping, counters."""

    name: str
    table: LadderTable
    seq: int
    tiers: dict[str, str] = field(default_factory=dict)
    last_round: dict[str, str] = field(default_factory=dict)
    last_seq: dict[str, int] = field(default_factory=dict)
    shown: dict[str, str] = field(default_factory=dict)
    history_pushed: dict[str, int] = field(default_factory=dict)
    known: set[str] = field(default_factory=set)
    """Players with a state: stored before the backfill, or rated by it."""
    stored: set[str] = field(default_factory=set)
    """Players stored before the backfill (their history already has entries)."""
    new_players: int = 0
    rated: int = 0
    last_rated: tuple[int, str] | None = None


async def plan(ctx: PipelineContext, rounds: Sequence[RoundResult], *, append: bool) -> tuple[list[RoundResult], int]:
    """The rounds to write (first copies, without those already stored) and how many were duplicates;
    raises :class:`BackfillRefused` for a ladder with rounds (without ``append``), a ladder with rounds
    in flight, or a round id the ladder already holds with other content."""
    deduplicated = first_copies(rounds)
    if deduplicated.conflicts:
        position, rejection = deduplicated.conflicts[0]
        raise BackfillRefused(f"round {position + 1} of the input: {rejection.message}")
    by_ladder: dict[str, list[RoundResult]] = defaultdict(list)
    for round_ in deduplicated.rounds:
        by_ladder[round_.ladder].append(round_)
    keep: set[tuple[str, str]] = set()
    for ladder, ladder_rounds in by_ladder.items():
        info = await ladder_info(ctx.store, ladder)
        if info.rounds and not append:
            raise BackfillRefused(f"ladder {ladder!r} already has {info.rounds} rounds (use --append to add to it)")
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
    todo, skipped = await plan(ctx, rounds, append=append)
    summary = BackfillSummary(rounds=len(rounds), duplicates=skipped)
    writer = BulkWriter(ctx.store)
    runs: dict[str, _LadderRun] = {}
    now = time.time()
    for round_ in todo:
        run = runs.get(round_.ladder)
        if run is None:
            run = runs[round_.ladder] = await _start(ctx, round_.ladder, [r for r in todo if r.ladder == round_.ladder])
            await writer.sadd(keys.ladders(), round_.ladder)
        run.seq += 1
        if round_.is_outcome_free():
            await writer.hset(keys.round_record(run.name, round_.round_id), _record(round_, run.seq, STATUS_NO_OUTCOME, now))
            await writer.zadd(keys.rounds(run.name), {round_.round_id: run.seq})
            summary.no_outcome += 1
        else:
            await _rate(ctx, writer, run, round_, now)
            summary.rated += 1
            summary.participations += round_.field_size
        summary.ladders[run.name] = summary.ladders.get(run.name, 0) + 1
        if on_round is not None:
            on_round(round_)
    for run in runs.values():
        summary.players += await _finish(ctx, writer, run, now)
    await writer.flush()
    return summary


async def _start(ctx: PipelineContext, ladder: str, ladder_rounds: list[RoundResult]) -> _LadderRun:
    """A ladder's run, seeded with the stored state of its players who appear in the backfill."""
    info = await ladder_info(ctx.store, ladder)
    run = _LadderRun(ladder, LadderTable(ctx.params), info.seq)
    if not info.rounds:
        return run
    players = sorted({p for r in ladder_rounds for p in r.players()})
    stored = await stored_players(ctx.store, ladder, players)
    present = [i for i, state in enumerate(stored.states) if state is not None]
    if present:
        names = [players[i] for i in present]
        run.table.scatter(run.table.rows(names), unpack_batch([stored.states[i] for i in present], ctx.params))
        run.known.update(names)
        run.stored.update(names)
        run.tiers.update((players[i], (stored.tiers[i] or b"").decode()) for i in present)
    return run


def _record(round_: RoundResult, seq: int, status: str, now: float) -> dict[str | bytes, str | int]:
    """The round record register_round.lua writes (and, for a rated round, what follows it)."""
    record: dict[str | bytes, str | int] = {
        "round_id": round_.round_id, "seq": seq, "status": status, "field_size": round_.field_size,
        "occurred_at": encode_float(round_.occurred_at), "received_at": encode_float(now),
        "content_hash": round_.content_hash()}
    if status == STATUS_RATED:
        record.update({"pending": 0, "rated_at": encode_float(now), "emitted": "1"})
    return record


async def _rate(ctx: PipelineContext, writer: BulkWriter, run: _LadderRun, round_: RoundResult, now: float) -> None:
    """Rate one round (replay's engine path) and queue its writes (phase one's and phase two's)."""
    players = round_.players()
    ranks = round_.ranks()
    rows = run.table.rows(players)
    before = run.table.gather(rows)
    update = rate_round(before, ranks, ctx.params, weight=round_.weight, perf_ceiling=round_.perf_ceiling,
                        time=round_.occurred_at)
    after = update.after
    run.table.scatter(rows, after)
    cfg = ctx.display(run.name)
    mu, sigma = number_texts("mu_after", after.mu), number_texts("sigma_after", after.sigma)
    shown = number_texts("display_rating", display_rating(after.mu, after.sigma, cfg))
    stored_tiers = [run.tiers.get(p) for p in players]
    tiers = tier_names(next_tier(tier_indices(stored_tiers, cfg), after.mu, after.sigma, cfg), cfg)
    changes = encode_changes(ChangeColumns(
        ladder=run.name, round_id=round_.round_id, field_size=round_.field_size, occurred_at=round_.occurred_at,
        players=players, ranks=ranks.tolist(), performance=number_texts("performance", update.performance),
        mu_before=number_texts("mu_before", before.mu), sigma_before=number_texts("sigma_before", before.sigma),
        mu_after=mu, sigma_after=sigma, display_rating=shown, tiers=tiers, rounds_played=after.rounds.tolist()))
    fanout = build_fanout(ctx, round_, run.seq, update.performance)

    await writer.hset(keys.round_record(run.name, round_.round_id), _record(round_, run.seq, STATUS_RATED, now))
    await writer.zadd(keys.rounds(run.name), {round_.round_id: run.seq})
    await writer.hset(keys.round_results(run.name, round_.round_id), dict(zip(players, changes)))
    await writer.hset(keys.round_perf(run.name, round_.round_id), {str(m.partition): m.value for m in fanout})
    history_length = ctx.store.history_length
    for player, change in zip(players, changes):
        key = keys.history(run.name, player)
        await writer.rpush(key, [change])
        pushed = run.history_pushed.get(player, 0) + 1
        if pushed >= 2 * history_length:  # trim as it goes: a long history never holds more than 2x
            await writer.ltrim_last(key, history_length)
            pushed = history_length
        run.history_pushed[player] = pushed
    new = [p for p in players if p not in run.known]
    run.known.update(new)
    run.new_players += len(new)
    run.tiers.update(zip(players, tiers))
    run.shown.update(zip(players, shown))
    run.last_round.update((p, round_.round_id) for p in players)
    run.last_seq.update((p, run.seq) for p in players)
    run.rated += 1
    run.last_rated = (run.seq, round_.round_id)


async def _finish(ctx: PipelineContext, writer: BulkWriter, run: _LadderRun, now: float) -> int:
    """Queue the final player hashes, history trims, leaderboard and ladder counters; returns the
    number of players written."""
    names = list(run.last_seq)
    rows = run.table.lookup(names)
    batch = run.table.gather(rows)
    states = pack_batch(batch)
    mu, sigma = number_texts("mu", batch.mu), number_texts("sigma", batch.sigma)
    times = number_texts("last_time", batch.last_time)
    history_length = ctx.store.history_length
    for i, player in enumerate(names):
        seq = run.last_seq[player]
        await writer.hset(keys.player(run.name, player), {
            "last_seq": seq, "queued_seq": seq, "mu": mu[i], "sigma": sigma[i], "rounds": int(batch.rounds[i]),
            "last_round": run.last_round[player], "last_time": times[i], "display_rating": run.shown[player],
            "tier": run.tiers[player], "state": states[i]})
        if run.history_pushed[player] > history_length or player in run.stored:
            await writer.ltrim_last(keys.history(run.name, player), history_length)
    await writer.zadd(keys.leaderboard(run.name), {p: run.shown[p] for p in names})
    info = await ladder_info(ctx.store, run.name)
    fields: dict[str | bytes, str | int] = {"seq": run.seq}
    if run.new_players:
        fields["players"] = int(info.fields.get("players", 0)) + run.new_players
    if run.last_rated is not None:  # what record_round_results.lua sets when a round becomes rated
        fields.update({"rounds_rated": int(info.fields.get("rounds_rated", 0)) + run.rated,
                       "last_rated_seq": run.last_rated[0], "last_round": run.last_rated[1],
                       "updated_at": encode_float(now)})
    await writer.hset(keys.ladder(run.name), fields)
    return len(names)

