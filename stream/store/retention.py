"""Retention: delete the stored results and fan-outs of old rounds, and history entries of old
rounds (RETAIN_* settings; docs/history.md, Retention).

Per ladder and kind a watermark in the ladder hash (``<kind>_trimmed_seq``) says up to which seq the
kind is deleted; a call walks forward from it over at most ``limit`` rounds and stops at the first
one within both limits or still in the sweeper's ledger. Round records and the index are kept. The
``history`` kind deletes no round key: it drops the rounds' players' history entries older than the
age (trim_history.lua), first, while the rounds' results or fan-outs still name them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from stream.contracts import PlayerUpdate
from stream.settings import Settings
from stream.store import keys
from stream.store.client import as_text, pipelined
from stream.store.store import Store, encode_float

DAY_S = 86_400.0
ROUNDS_PER_CALL = 1_000
"""Rounds one call may walk per ladder and kind (bounds a sweep's work)."""


@dataclass(frozen=True)
class Retention:
    """How much of each kind to keep: the last ``keep`` rated rounds and/or rounds younger than
    ``days`` (0 = no limit of that sort)."""

    kind: str
    keep: int
    days: float

    def watermark_field(self) -> str:
        return f"{self.kind}_trimmed_seq"


HISTORY = "history"
"""The kind whose rounds are not deleted: their players' history entries older than the age are."""


def policies(settings: Settings) -> list[Retention]:
    """The active retention policies of the settings (RETAIN_*)."""
    out = [Retention(HISTORY, 0, settings.retain_history_days),  # first: it reads the players from results / fan-outs
           Retention("results", settings.retain_round_results, settings.retain_round_results_days),
           Retention("fanouts", settings.retain_fanouts, settings.retain_fanouts_days)]
    return [p for p in out if p.keep > 0 or p.days > 0]


async def trim(store: Store, rules: list[Retention], *, now: float, limit: int = ROUNDS_PER_CALL) -> dict[str, int]:
    """Apply ``rules`` to every ladder (module docstring); returns rounds trimmed per kind."""
    trimmed = {rule.kind: 0 for rule in rules}
    if not rules:
        return trimmed
    for ladder in sorted(as_text(m) for m in await store.client.smembers(keys.ladders())):
        for rule in rules:
            trimmed[rule.kind] += await _trim_ladder(store, ladder, rule, now=now, limit=limit)
    return trimmed


async def _trim_ladder(store: Store, ladder: str, rule: Retention, *, now: float, limit: int) -> int:
    mark_raw, last_raw = await store.client.hmget(keys.ladder(ladder), [rule.watermark_field(), "last_rated_seq"])
    mark, last = int(mark_raw or 0), int(last_raw or 0)
    by_count = last - rule.keep if rule.keep > 0 else 0
    horizon = last if rule.days > 0 else by_count  # rounds above `by_count` may still go by age
    if horizon <= mark:
        return 0
    candidates = cast("list[tuple[bytes, float]]", await store.client.zrangebyscore(
        keys.rounds(ladder), f"({mark}", horizon, start=0, num=limit, withscores=True))
    if not candidates:
        return 0
    replies = await pipelined(store.client, candidates, lambda pipe, c: pipe.hget(  # occurred_at, in the ledger
        keys.round_record(ladder, as_text(c[0])), "occurred_at").zscore(keys.incomplete_rounds(ladder), c[0]))
    cutoff = now - rule.days * DAY_S if rule.days > 0 else None
    doomed: list[str] = []
    new_mark = mark
    for i, (round_id, score) in enumerate(candidates):
        occurred, incomplete = replies[2 * i], replies[2 * i + 1]
        old_enough = score <= by_count or (cutoff is not None and occurred is not None and float(occurred) < cutoff)
        if incomplete is not None or not old_enough:
            break
        doomed.append(as_text(round_id))
        new_mark = int(score)
    if not doomed:
        return 0
    if rule.kind == HISTORY:
        assert cutoff is not None
        await _trim_histories(store, ladder, doomed, cutoff)
    else:
        doomed_keys = [(keys.round_results if rule.kind == "results" else keys.round_perf)(ladder, r) for r in doomed]
        if rule.kind == "fanouts":  # phase two's digests of a fan-out go with it
            doomed_keys += [keys.round_digests(ladder, r) for r in doomed]
        await store.client.delete(*doomed_keys)
    await store.client.hset(keys.ladder(ladder), rule.watermark_field(), new_mark)
    return len(doomed)


async def _trim_histories(store: Store, ladder: str, round_ids: list[str], cutoff: float) -> None:
    """Drop the history entries older than ``cutoff`` of every player of ``round_ids`` (players
    read from the rounds' results, else their fan-outs; rounds with neither are skipped)."""
    replies = await pipelined(store.client, round_ids, lambda pipe, round_id: pipe.hkeys(
        keys.round_results(ladder, round_id)).hvals(keys.round_perf(ladder, round_id)))
    players: set[str] = set()
    for results, fanouts in zip(replies[::2], replies[1::2]):
        if results:
            players.update(as_text(p) for p in results)
        else:
            players.update(p for raw in fanouts for p in PlayerUpdate.from_json(raw).players)
    history_keys = [keys.history(ladder, p) for p in sorted(players)]
    if history_keys:
        await store._run(lambda pipe: store._per_player(pipe, "trim_history", history_keys, [encode_float(cutoff)]))
