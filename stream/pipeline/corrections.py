"""Corrections: void a round, amend its standings or insert a late one, and re-rate the ladder from there.

Plain async functions (no Kafka): the ``corrections`` agent calls :func:`handle_correction` per
message, sends its dead letter or its events, then calls :func:`finish_correction`. The steps
(validate, hold the ladder, read the stored rounds, re-rate in process with ``rerate.py``, write
what changed, emit ``correction`` RatingChanges, release) are docs/history.md "Corrections"; an
``insert`` is phase one's for a ``late`` round ("Late rounds"), rated in its place. A worker
killed in between leaves the hold naming the correction: its redelivery resumes it from its plan.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from stream.batch.models import support
from stream.contracts import DeadLetter, RatingChange, RoundRejected, RoundResult, parse_round
from stream.contracts.correction import AMEND, INSERT, VOID, Correction, parse_correction
from stream.contracts.events import CORRECTION_CHANGE
from stream.contracts.round import (CONFLICT, HISTORY_TRIMMED, INTERNAL_ERROR, NOT_CORRECTABLE, STORED, UNKNOWN_ROUND,
                                    check_supported)
from stream.engine import PlayerState
from stream.batch.replay import occurrence
from stream.engine.ladders import LadderConfig
from stream.engine.display import DisplayConfig, display_rating, is_provisional, league_division, tier_names
from stream.engine.state import pack_batch
from stream.logsafe import log_safe
from stream.pipeline import faults, rating_models
from stream.pipeline.context import PipelineContext
from stream.contracts.encoding import number_texts
from stream.pipeline.messages import Origin, RatingChangeMessage
from stream.pipeline.rerate import HistoryRound, Rerated, Texts, encode_changes, encode_fanouts, rerate, rerate_model
from stream.store import corrections as ledger
from stream.store.bulk import LadderWriter, ladder_info
from stream.store.player_hash import PlayerRows
from stream.store.corrections import RoundRewrite, StoredRound, rewrite_rounds
from stream.store.store import (STATUS_FAILED, STATUS_LATE, STATUS_NO_OUTCOME, STATUS_RATED, STATUS_VOIDED,
                                encode_float, fanout_fields)

log = logging.getLogger(__name__)

CORRECTABLE = (STATUS_RATED, STATUS_NO_OUTCOME, STATUS_VOIDED)
"""Statuses of a round a correction may target (after the ladder drained)."""


@dataclass
class CorrectionResult:
    """What to send for one ``corrections`` message, and what happened."""

    outcome: str  # applied | duplicate | no-op | rejected
    ladder: str | None = None
    correction_id: str | None = None
    events: list[RatingChangeMessage] = field(default_factory=list)
    dead_letter: DeadLetter | None = None
    entry: dict[str, Any] | None = None
    """The ledger entry :func:`finish_correction` records (None: nothing to record)."""
    rerated: bool = False
    seconds: dict[str, float] = field(default_factory=dict)
    """Time spent per step (logs and bench/corrections.py)."""


def _rejected(rejection: RoundRejected, raw: bytes, origin: Origin, correction: Correction | None = None) -> CorrectionResult:
    letter = DeadLetter.from_rejection(rejection, raw, rejected_at=time.time(), topic=origin.topic,
                                       partition=origin.partition, offset=origin.offset)
    return CorrectionResult("rejected", None if correction is None else correction.ladder,
                            None if correction is None else correction.correction_id, dead_letter=letter)


async def handle_correction(ctx: PipelineContext, raw: bytes, origin: Origin = Origin()) -> CorrectionResult:
    """Steps 1-5 of the module docstring; the caller sends the result, then calls :func:`finish_correction`."""
    await ctx.refresh_seasons()  # the seasons started since (SEASON_REFRESH_S)
    try:
        correction = parse_correction(raw, limits=ctx.limits)
        if correction.round is not None:
            check_supported(correction.round, support(ctx.ladder(correction.ladder).model), "the stream")
    except RoundRejected as rejection:
        return _rejected(rejection, raw, origin)
    store, ladder, cid = ctx.store, correction.ladder, correction.correction_id
    entry = await ledger.ledger_entry(store, ladder, cid)
    if entry is not None:
        if entry.get("content_hash") == correction.content_hash():
            await ledger.release(store, ladder, cid)  # a repair re-published after its hold was set again
            return CorrectionResult("duplicate", ladder, cid)
        return _rejected(RoundRejected(CONFLICT, f"correction_id {cid!r} of ladder {ladder!r} was already used for "
                                       "another correction; the first one stands", "correction_id"), raw, origin,
                         correction)
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    await _hold(ctx, correction)
    while (await ladder_info(store, ladder)).in_flight:  # the rounds registered before the hold: done first
        await asyncio.sleep(ctx.settings.hold_poll_s)
    seconds["hold"] = time.perf_counter() - started

    started = time.perf_counter()
    stored = await ledger.ladder_rounds(store, ladder)
    seconds["read"] = time.perf_counter() - started
    target = next((r for r in stored if r.round_id == correction.round_id), None)
    problem = _check(correction, target, stored)
    if problem is not None:
        await ledger.release(store, ladder, cid)
        return _rejected(problem, raw, origin, correction)
    assert target is not None
    entry = {"kind": correction.kind, "round_id": correction.round_id, "content_hash": correction.content_hash(),
             "at": time.time(), "reason": correction.reason}
    if correction.kind == VOID and target.status == STATUS_VOIDED and cid not in _trail_ids(target):
        return CorrectionResult("no-op", ladder, cid, entry=entry | {"outcome": "no-op"})  # voided already
    inserted = _inserted(correction, stored)
    if correction.kind == INSERT and not inserted:  # an earlier insert rated the ladder's late rounds
        return CorrectionResult("no-op", ladder, cid, entry=entry | {"outcome": "no-op"})

    started = time.perf_counter()
    by_time = ctx.ladder_order.by_time(ladder)
    cfg = ctx.ladder(ladder)
    history, target_players, start = _histories(correction, target, stored, inserted, by_time, cfg.draws_rate)
    plan = await ledger.read_plan(store, ladder, cid)
    resumed = plan is not None  # a redelivery resuming: checked before its plan was written
    if cfg.rating_model is None:
        rated = rerate(history, cfg.elo_mmr, ctx.display(ladder))
    else:
        problem = None if resumed else _unreproduced(correction, cfg, stored, by_time)
        if problem is not None:
            await ledger.release(store, ladder, cid)
            return _rejected(problem, raw, origin, correction)
        rated = rerate_model(history, cfg, ctx.display(ladder))
    affected, dirty = _affected(rated, start, {r.round_id for r in inserted} | {target.round_id}, target_players,
                                by_time)
    seconds["rerate"] = time.perf_counter() - started
    if cfg.rating_model is not None and cfg.rating_model.teams is not None and not resumed:
        unordered = next((rated.rounds[k].round_id for k in affected if not rated.rounds[k].ordered), None)
        if unordered is not None:
            await ledger.release(store, ladder, cid)
            return _rejected(_tie_rejection(correction, cfg, unordered), raw, origin, correction)

    started = time.perf_counter()
    before = plan
    if before is None:
        before = {p: list(mu_sigma) for p, mu_sigma in (await ledger.ratings(store, ladder, sorted(dirty))).items()}
        await ledger.write_plan(store, ladder, cid, before)
    touched = sorted(set(before) | dirty)
    for round_ in inserted or [target]:
        await _record_trail(ctx, correction, round_)
    events = await _write(ctx, correction, target, stored, rated, affected, touched, before)
    seconds["write"] = time.perf_counter() - started
    log.info("correction %s (%s of round %s/%s): %d rounds re-rated, %d affected, %d players touched, %d events",
             log_safe(cid), correction.kind, log_safe(ladder), log_safe(correction.round_id), len(history),
             len(affected), len(touched), len(events))
    return CorrectionResult("applied", ladder, cid, events=events, entry=entry | {"outcome": "applied"}, rerated=True,
                            seconds=seconds)


async def finish_correction(ctx: PipelineContext, result: CorrectionResult) -> None:
    """Once the events are sent: record the correction and release the hold (or record why it was dead-lettered)."""
    if result.dead_letter is not None and result.ladder is not None and result.correction_id is not None:
        await ledger.record_rejection(ctx.store, result.ladder, result.correction_id, result.dead_letter.reason,
                                      result.dead_letter.message)
    if result.entry is not None and result.ladder is not None and result.correction_id is not None:
        await ledger.finish(ctx.store, result.ladder, result.correction_id, result.entry, rerated=result.rerated)


async def fail_correction(ctx: PipelineContext, raw: bytes, origin: Origin, error: BaseException) -> CorrectionResult:
    """Set aside a correction whose handling kept raising: ``internal_error``, its hold released."""
    text = f"{type(error).__name__}: {error}"
    result = _rejected(RoundRejected(INTERNAL_ERROR, f"handling the correction kept raising {text[:500]}"), raw, origin)
    try:
        correction = parse_correction(raw, limits=ctx.limits)
    except Exception:  # noqa: BLE001 - what makes it raise may be its parsing: it holds nothing then
        return result
    if await ledger.release(ctx.store, correction.ladder, correction.correction_id):
        log.error("correction %s of ladder %s failed and set aside (%s); the ladder's hold is released",
                  log_safe(correction.correction_id), log_safe(correction.ladder), text[:200])
    return result


async def _hold(ctx: PipelineContext, correction: Correction) -> None:
    """Hold the ladder; wait while another correction holds it (a takeover's brief overlap)."""
    while (holder := await ledger.hold(ctx.store, correction.ladder, correction.correction_id, now=time.time())) \
            != correction.correction_id:
        log.info("ladder %s is held by correction %s; correction %s waits", log_safe(correction.ladder),
                 log_safe(holder), log_safe(correction.correction_id))
        await asyncio.sleep(ctx.settings.hold_poll_s)


def _trail_ids(round_: StoredRound) -> list[str]:
    return [step["id"] for step in json.loads(round_.record.get("corrections", "[]"))]


def _check(correction: Correction, target: StoredRound | None, stored: list[StoredRound]) -> RoundRejected | None:
    """Why the correction cannot be applied to the stored history (None: it can)."""
    ladder, round_id = correction.ladder, correction.round_id
    if target is None:
        return RoundRejected(UNKNOWN_ROUND, f"ladder {ladder!r} has no round {round_id!r}", "round_id")
    if correction.kind == INSERT:
        if target.status != STATUS_LATE and correction.correction_id not in _trail_ids(target) \
                and not any(r.status == STATUS_LATE for r in stored):
            return RoundRejected(NOT_CORRECTABLE, f"round {round_id!r} of ladder {ladder!r} is {target.status}, not "
                                 "late: it cannot be inserted", "round_id")
    elif target.status not in CORRECTABLE and not (correction.kind == VOID and target.status == STATUS_FAILED):
        return RoundRejected(NOT_CORRECTABLE, f"round {round_id!r} of ladder {ladder!r} is {target.status}, "
                             "not rated: it cannot be corrected", "round_id")
    if correction.kind == AMEND and target.status == STATUS_VOIDED and correction.correction_id not in _trail_ids(target):
        return RoundRejected(NOT_CORRECTABLE, f"round {round_id!r} of ladder {ladder!r} was voided; a voided round "
                             "cannot be amended", "round_id")
    missing = next((r for r in stored if r.status == STATUS_RATED and not r.fanout and "amended" not in r.record), None)
    if missing is not None:
        return RoundRejected(HISTORY_TRIMMED, f"the stored fan-out of round {missing.round_id!r} (seq {missing.seq}) of "
                             f"ladder {ladder!r} was dropped by retention: a correction re-rates the ladder from its "
                             "first round, so corrections reach a ladder only while every fan-out is kept "
                             "(RETAIN_FANOUTS=0, RETAIN_FANOUTS_DAYS=0; docs/history.md)", "round_id")
    return None


def _stored_round(seq: int, stored: StoredRound, draws_rate: bool) -> HistoryRound | None:
    """The standings a stored round is rated with now (None: it rates nobody): its amendment (or a
    late round's body), or its fan-out's entries (players in rank order; ties in fan-out order)."""
    status = stored.status
    if status == STATUS_VOIDED:
        return None
    record = stored.record
    if "amended" in record or status == STATUS_LATE:  # a late round: the body its registration kept
        amended = _amended(record["amended"] if "amended" in record else record["body"])
        return None if amended.is_outcome_free(draws_rate) else HistoryRound.of(amended, seq)
    if status != STATUS_RATED:
        return None
    updates = [orjson.loads(m) for m in stored.fanout]  # its fan-out, as phase one wrote it
    entries = sorted([(e["rank"], e["player"], e.get("team"), e.get("weight")) for u in updates for e in u["entries"]],
                     key=lambda e: e[0])  # (rank, player, team, share played); stable: ties stay in fan-out order
    ceiling = record.get("perf_ceiling")
    teamed = any(e[3] is not None for e in entries)  # a round with teams or partial play
    return HistoryRound(stored.round_id, seq, updates[0]["occurred_at"], updates[0]["weight"],
                        float(ceiling) if ceiling else math.inf, [e[1] for e in entries], [e[0] for e in entries],
                        [e[2] for e in entries] if teamed else None,
                        [1.0 if e[3] is None else e[3] for e in entries] if teamed else None,
                        ordered=_ties_in_one_message(updates))


def _ties_in_one_message(updates: list[dict[str, Any]]) -> bool:
    """Whether the fan-out ``updates`` keep the standings' order within every tie (none split across messages)."""
    if len(updates) <= 1:
        return True
    messages: dict[int, set[int]] = {}
    entries: dict[int, set[str]] = {}
    for k, update in enumerate(updates):
        for e in update["entries"]:
            messages.setdefault(e["rank"], set()).add(k)
            entries.setdefault(e["rank"], set()).add(e["player"] if e.get("team") is None else "\0" + e["team"])
    return all(len(messages[rank]) <= 1 or len(entries[rank]) <= 1 for rank in messages)


def _amended(body: str) -> RoundResult:
    try:
        return parse_round(body, limits=STORED)
    except RoundRejected as rejection:  # an outcome-free amendment
        assert rejection.round is not None, rejection
        return rejection.round


def _inserted(correction: Correction, stored: list[StoredRound]) -> list[StoredRound]:
    """The rounds an insert rates in their place: the ``late`` ones and those it already marked."""
    if correction.kind != INSERT:
        return []
    return [r for r in stored if r.status == STATUS_LATE or correction.correction_id in _trail_ids(r)]


REPRODUCED = 1e-9
"""Tolerance of :func:`_unreproduced` on a stored round's ratings against its re-rate (they are bit-equal)."""


def _unreproduced(correction: Correction, cfg: LadderConfig, stored: list[StoredRound],
                  by_time: bool) -> RoundRejected | None:
    """Why a ladder whose model has a team call (TrueSkill) cannot be re-rated (None: it can): its
    history re-rated as the fan-outs read must reproduce the stored ratings of every round with a
    tie split across messages (docs/history.md "Corrections")."""
    model = cfg.rating_model
    if model is None or model.teams is None:
        return None  # the other models' ratings do not depend on the order within a tie
    current = [h for r in stored
               if r.status != STATUS_LATE and (h := _stored_round(r.seq, r, cfg.draws_rate)) is not None]
    if all(h.ordered for h in current):
        return None
    if by_time:
        current.sort(key=lambda h: sort_key(h, True))
    rated = rerate_model(current, cfg, DisplayConfig())
    by_id = {r.round_id: r for r in stored}
    bounds = rated.offsets.tolist()
    for k, h in enumerate(current):
        if h.ordered:
            continue  # read in its standings' order: its ratings follow from its priors
        carried = {e["player"]: (e.get("mu_after"), e.get("sigma_after"))
                   for m in by_id[h.round_id].fanout for e in orjson.loads(m)["entries"]}
        for i in range(bounds[k], bounds[k + 1]):
            mu, sigma = carried.get(rated.players[i], (None, None))
            if mu is None or sigma is None:
                continue  # an amendment not yet written: nothing stored to compare
            if abs(mu - rated.mu_after[i]) > REPRODUCED or abs(sigma - rated.sigma_after[i]) > REPRODUCED:
                return _tie_rejection(correction, cfg, h.round_id)
    return None


def _tie_rejection(correction: Correction, cfg: LadderConfig, round_id: str) -> RoundRejected:
    return RoundRejected(NOT_CORRECTABLE, f"round {round_id!r} of ladder {correction.ladder!r} has a tie split across "
                         "fan-out messages: its standings' order within the tie, on which model "
                         f"{cfg.model!r} depends, is not stored (re-rate the corrected history into a fresh ladder: "
                         "stream backfill)", "round_id")


def sort_key(h: HistoryRound, by_time: bool) -> tuple[float, int]:
    """A round's place in its ladder's rating order (``stream.contracts.ordering``)."""
    return (h.occurred_at, h.seq) if by_time else (0.0, h.seq)


def _histories(correction: Correction, target: StoredRound, stored: list[StoredRound], inserted: list[StoredRound],
               by_time: bool, draws_rate: bool) -> tuple[list[HistoryRound], set[str], tuple[float, int]]:
    """The corrected history in rating order, the players of the corrected rounds (before and
    after), and where in that order the correction starts to change anything."""
    history: list[HistoryRound] = []
    target_players: set[str] = set()
    starts: list[tuple[float, int]] = []
    late = {r.round_id for r in inserted}
    for r in stored:
        current = _stored_round(r.seq, r, draws_rate)
        if r.round_id in late:
            if current is not None:
                target_players.update(current.players)
                starts.append(sort_key(current, by_time))
        elif r is target and correction.kind != INSERT:
            # a round phase two gave up on still has its fan-out: its repair re-rates the rounds sharing its players
            target_players.update(current.players if current is not None else
                                  [e["player"] for m in r.fanout for e in orjson.loads(m)["entries"]])
            starts.append((float(r.record.get("occurred_at", 0.0)) if by_time else 0.0, r.seq))
            amended = None if correction.kind == VOID else correction.round
            target_players.update(amended.players() if amended is not None else ())
            current = (None if amended is None or amended.is_outcome_free(draws_rate)
                       else HistoryRound.of(amended, r.seq))
            if current is not None:
                starts.append(sort_key(current, by_time))
        if current is not None:
            history.append(current)
    if by_time:
        history.sort(key=lambda h: sort_key(h, True))
    return history, target_players, min(starts, default=(0.0, target.seq))


def _affected(rated: Rerated, start: tuple[float, int], targets: set[str], target_players: set[str],
              by_time: bool) -> tuple[list[int], set[str]]:
    """The rounds the correction changes (indices into ``rated.rounds``) and the players whose
    state it changes: the corrected rounds', then those of every later round holding one of them."""
    dirty = set(target_players)
    affected: list[int] = []
    players = rated.players
    first = next((k for k, h in enumerate(rated.rounds) if sort_key(h, by_time) >= start), len(rated.rounds))
    bounds = rated.offsets.tolist()
    for k in range(first, len(rated.rounds)):
        mine = players[bounds[k]:bounds[k + 1]]
        if rated.rounds[k].round_id in targets or not dirty.isdisjoint(mine):
            affected.append(k)
            dirty.update(mine)
    return affected, dirty


async def _record_trail(ctx: PipelineContext, correction: Correction, target: StoredRound) -> None:
    """The correction on the round record (status or standings, and its trail), before the re-rate's writes."""
    trail = json.loads(target.record.get("corrections", "[]"))
    if correction.correction_id not in [step["id"] for step in trail]:
        trail.append({"id": correction.correction_id, "kind": correction.kind, "at": time.time(),
                      **({"reason": correction.reason} if correction.reason else {})})
    fields: dict[Any, str | int] = {"corrections": json.dumps(trail, separators=(",", ":"), ensure_ascii=False)}
    if correction.kind == VOID:  # a failed round (phase two's repair) stays failed
        fields |= {"status": STATUS_FAILED if target.status == STATUS_FAILED else STATUS_VOIDED,
                   "voided_by": correction.correction_id}
    elif correction.kind == INSERT:
        if target.status == STATUS_LATE:  # its standings kept as an amendment's are (re-rates read them there)
            fields |= {"amended": _amended(target.record["body"]).to_json(), "inserted_by": correction.correction_id,
                       "status": STATUS_RATED, "pending": 0, "emitted": "1", "rated_at": encode_float(time.time())}
    else:
        assert correction.round is not None
        free = correction.round.is_outcome_free(ctx.ladder(correction.ladder).draws_rate)
        fields |= {"amended": correction.round.to_json(), "amended_by": correction.correction_id,
                   "field_size": correction.round.field_size, "status": STATUS_NO_OUTCOME if free else STATUS_RATED}
        if not free:
            fields |= {"pending": 0, "emitted": "1", "rated_at": encode_float(time.time())}
    await ledger.mark_round(ctx.store, correction.ladder, target.round_id, fields, drop_body=correction.kind == INSERT)


async def _write(ctx: PipelineContext, correction: Correction, target: StoredRound, stored: list[StoredRound],
                 rated: Rerated, affected: list[int], touched: list[str],
                 before: dict[str, list[str]]) -> list[RatingChangeMessage]:
    """Write the re-rated part of the ladder (module docstring, step 5); returns the correction's events."""
    ladder, s = correction.ladder, target.seq
    cfg = ctx.display(ladder)
    writer = LadderWriter(ctx.store)
    partitions = await ctx.outbox.partition_count()
    results_trimmed = await ledger.results_trimmed_seq(ctx.store, ladder)
    round_of = rated.round_of()
    is_affected = np.zeros(len(rated.rounds), dtype=bool)
    is_affected[affected] = True
    # participations written: every one of an affected round, and the history entries of touched players
    table = rated.table
    touched_rows = table.lookup(touched)
    present = touched_rows >= 0
    is_touched = np.zeros(table.size, dtype=bool)
    is_touched[touched_rows[present]] = True
    count = np.bincount(rated.rows, minlength=table.size)
    keep = is_touched[rated.rows] & (count[rated.rows] - occurrence(rated.rows) <= ctx.store.history_length)
    keep |= is_affected[round_of]
    at = np.flatnonzero(keep)
    changes = encode_changes(rated, ladder, at, Texts.of(rated, cfg, at), cfg)
    entries: dict[str, list[bytes]] = {p: [] for p in touched}
    results: dict[int, dict[str, bytes]] = {k: {} for k in affected}
    for i, k, change in zip(at.tolist(), round_of[at].tolist(), changes):
        player = rated.players[i]
        if player in entries:
            entries[player].append(change)
        if k in results:
            results[k][player] = change

    fanouts = encode_fanouts(rated, ladder, affected, partitions, ctx.settings.max_message_bytes)
    await rewrite_rounds(ctx.store, ladder, correction.correction_id, [  # fields: partition, or partition.k if split
        RoundRewrite(rated.rounds[k].round_id, results[k] if rated.rounds[k].seq > results_trimmed else {},
                     dict(fanout_fields(fanout))) for k, fanout in zip(affected, fanouts)])
    written = {h.round_id for h in rated.rounds}
    for r in stored:  # rounds of the suffix that rate nobody now (voided, amended to no outcome)
        if r.seq >= s and r.round_id not in written:
            await writer.drop_round_outputs(ladder, r.round_id)
    await writer.flush()
    await faults.at(faults.CORRECTION_MID_RERATE)
    await writer.clear_history(ladder, touched)
    await writer.push_history(ladder, entries)

    kept = [p for p, row in zip(touched, touched_rows.tolist()) if row >= 0]
    removed = [p for p, row in zip(touched, touched_rows.tolist()) if row < 0]
    rows = table.lookup(kept)
    last = rated.last[rows]
    batch = table.gather(rows)
    mu, sigma = number_texts("mu", batch.mu), number_texts("sigma", batch.sigma)
    shown = number_texts("display_rating", rated.shown[last])
    seqs = [rated.rounds[k].seq for k in round_of[last].tolist()]
    await writer.players(ladder, kept, PlayerRows(
        seq=seqs, mu=mu, sigma=sigma, rounds=batch.rounds.tolist(),
        last_round=[rated.rounds[k].round_id for k in round_of[last].tolist()],
        last_time=number_texts("last_time", batch.last_time), display_rating=shown,
        tier=tier_names(rated.final_tier[rows], cfg), state=pack_batch(batch)))
    await writer.remove_players(ladder, removed)
    fields: dict[str, Any] = {"rounds_rated": len(rated.rounds), "updated_at": encode_float(time.time())}
    if rated.rounds:  # the last in rating order (on a ladder rated by occurred_at, not always the largest seq)
        fields |= {"last_rated_seq": rated.rounds[-1].seq, "last_round": rated.rounds[-1].round_id}
    # every round voided: no last rated round; ``players`` is recounted after the write
    await writer.ladder_fields(ladder, fields, drop=() if rated.rounds else ("last_rated_seq", "last_round"))
    await writer.close()
    await ledger.recount_players(ctx.store, ladder)
    occurred_at = float(target.record.get("occurred_at", 0.0))
    return _events(ctx, correction, rated, before, kept, rows, last, mu, sigma, shown, removed, occurred_at)


def _events(ctx: PipelineContext, correction: Correction, rated: Rerated, before: dict[str, list[str]],
            kept: list[str], rows: np.ndarray, last: np.ndarray, mu: list[str], sigma: list[str], shown: list[str],
            removed: list[str], occurred_at: float) -> list[RatingChangeMessage]:
    """A RatingChange (kind ``correction``) for every touched player whose rating moved (one left
    without a round: back to the newcomer prior)."""
    ladder, cfg = correction.ladder, ctx.display(correction.ladder)
    newcomer = PlayerState.new(ctx.ladder(correction.ladder).newcomer)
    prior_mu, prior_sigma = encode_float(newcomer.mu), encode_float(newcomer.sigma)
    round_of = rated.round_of()
    tiers = tier_names(rated.final_tier[rows], cfg)
    out: list[RatingChangeMessage] = []
    for j, player in enumerate(kept):
        old = before.get(player, [prior_mu, prior_sigma])
        if old == [mu[j], sigma[j]]:
            continue
        i = int(last[j])
        h = rated.rounds[int(round_of[i])]
        change = RatingChange(ladder=ladder, round_id=correction.round_id, player=player, rank=int(rated.ranks[i]),
                              field_size=len(h.players),
                              performance=None if rated.no_performance else float(rated.performance[i]),
                              mu_before=float(old[0]), sigma_before=float(old[1]), mu_after=float(mu[j]),
                              sigma_after=float(sigma[j]), display_rating=float(shown[j]), tier=tiers[j] or None,
                              rounds_played=int(rated.rounds_played[i]), occurred_at=h.occurred_at,
                              kind=CORRECTION_CHANGE, correction_id=correction.correction_id,
                              provisional=bool(is_provisional(float(sigma[j]), int(rated.rounds_played[i]), cfg)))
        change.league, change.division = league_division(change.tier, cfg)
        out.append(RatingChangeMessage(player.encode(), change.to_json().encode()))
    prior_shown = float(display_rating(np.array([newcomer.mu]), np.array([newcomer.sigma]), cfg)[0])
    for player in removed:
        if player not in before:
            continue
        old = before[player]
        change = RatingChange(ladder=ladder, round_id=correction.round_id, player=player, rank=None, field_size=None,
                              performance=None, mu_before=float(old[0]), sigma_before=float(old[1]),
                              mu_after=newcomer.mu, sigma_after=newcomer.sigma, display_rating=prior_shown, tier=None,
                              rounds_played=0, occurred_at=occurred_at, kind=CORRECTION_CHANGE,
                              correction_id=correction.correction_id,
                              provisional=bool(is_provisional(newcomer.sigma, 0, cfg)))
        out.append(RatingChangeMessage(player.encode(), change.to_json().encode()))
    return out
