"""What-if: what a round would do to its players' ratings, from the live state, writing nothing.

A contest's live scoreboard (partial or hypothetical) is rated exactly as the stream would rate
it as the ladder's next round: the same parse and support check as phase one
(``contracts.parse_round``, ``rating_models.support``), the players' stored packed states read in
one round trip (``Store.read_states``: HMGETs, read-only commands, the fields phase two reads;
newcomers get the ladder model's prior),
then phase one's engine call (:func:`stream.pipeline.teams.round_performances` for Elo-MMR
ladders, teams and partial play included: the call of phase one's one-round path, equal to its
batch path's ``rate_ladder_rounds``; :func:`stream.pipeline.rating_models.rate_rounds` for
rating-only models) and phase two's update (``engine.phase_two`` with the row weight ``round
weight x share played``, or ``rating_models.apply``), and the display rules phase two applies
(``engine.display.display_rating`` and ``next_tier`` from the stored tier). The floats are the
ones the stream then writes for the same round if nobody's state moves in between (the
pipeline's fan-out carries each float as its ``repr`` text, which reads back to the same float).

Tier targets (:func:`tier_targets`): the rank a named player needs to reach the next tier, and to
keep his current one. Elo-MMR's rating is monotone in rank (paper, Theorem 5.5) and its sigma
after a round does not depend on the outcome (Eq. 8), so the tier after the round is monotone in
rank too and a binary search over the positions the player could take (ahead of, tied with or
behind each rank group of the others) finds the worst rank that still reaches a tier: about
2 log2(N) evaluations of that player's phase-one performance (``engine.performance.performance_of``,
his tie group's equation alone) and of his phase two.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from stream import engine
from stream.contracts import RoundResult
from stream.contracts.round import NO_OUTCOME, Limits, RoundRejected, Standing, check_supported, parse_round
from stream.engine.display import UNPLACED, display_rating, is_provisional, next_tier, tier_indices, tier_names
from stream.engine.ladders import LadderConfig
from stream.engine.performance import performance_of
from stream.engine.state import PlayerBatch, pack_batch, unpack_batch
from stream.pipeline import rating_models
from stream.pipeline.teams import fanout_columns, is_team_round, round_performances
from stream.store.client import AsyncRedis
from stream.store.store import Store, StoredStates

ROUND_ID = "what-if"
"""The round id a body without one is read with (nothing is registered under it)."""
MAX_EXPLAINED = 5
"""Most players a what-if request may ask tier targets for (each costs ~2 log2(N) phase-one solves)."""


class WhatIfRefused(ValueError):
    """A what-if request that is not a round the stream would rate: ``code`` is the input
    contract's reason (``no_outcome``, ``duplicate_player``, ...) or the request's own."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(f"{code}: {message}")
        self.message = message
        self.code = code


@dataclass(frozen=True)
class WhatIfRows:
    """Every player of the round (standings order) before and after it, as columns."""

    players: list[str]
    ranks: np.ndarray
    teams: list[str | None] | None
    shares: list[float] | None
    known: np.ndarray
    """False for a newcomer (no stored state: rated from the model's prior)."""
    rounds_before: np.ndarray
    performance: np.ndarray | None
    """None for a rating-only model without a performance (its RatingChange says null)."""
    mu_before: np.ndarray
    sigma_before: np.ndarray
    mu_after: np.ndarray
    sigma_after: np.ndarray
    display_before: np.ndarray
    display_after: np.ndarray
    tier_before: list[str]
    tier_after: list[str]
    states_after: list[bytes] | None = None
    """The packed states after the round (with ``rate(keep_states=True)``: what phase two stores)."""


@dataclass(frozen=True)
class TierTarget:
    """A named player's ranks to reach the next tier and to keep the current one (None: no rank
    of this round reaches it; ``next_tier`` None: he is in the top tier)."""

    player: str
    tier: str
    next_tier: str | None
    rank_for_next: int | None
    tied_for_next: bool
    rank_to_keep: int | None
    tied_to_keep: bool
    available: bool = True
    reason: str | None = None


def check_round(round_: RoundResult, cfg: LadderConfig) -> None:
    """Phase one's support check (``check_supported``): RoundRejected as the stream would dead-letter it."""
    check_supported(round_, rating_models.support(cfg), "the stream")


async def load(r: AsyncRedis, ladder: str, players: Sequence[str]) -> StoredStates:
    """The players' packed states and tiers (one round trip of read-only commands; what phase two reads)."""
    return await Store(r, history_length=1).read_states(ladder, players)


def rate(cfg: LadderConfig, round_: RoundResult, stored: StoredStates, *, keep_states: bool = False) -> WhatIfRows:
    """Rate ``round_`` from the players' ``stored`` states as phase one then phase two would
    (module docstring). ``stored`` is aligned with ``round_.players()``."""
    n = round_.field_size
    members = [np.arange(n, dtype=np.int64)]
    known = np.fromiter((s is not None for s in stored.states), dtype=bool, count=n)
    before = unpack_batch(stored.states, cfg.newcomer)
    performance: np.ndarray | None
    states_after = None
    if cfg.rating_model is not None:
        modelled = rating_models.rate_rounds(cfg, stored.states, members, [round_])
        mu_after, sigma_after = modelled.mu, modelled.sigma
        performance = modelled.performance if cfg.rating_model.performs else None
        if keep_states:
            states_after = pack_batch(rating_models.apply(before, mu_after, sigma_after,
                                                          np.full(n, round_.occurred_at)))
    else:
        params = cfg.elo_mmr
        days = engine.elapsed_days(before.last_time, round_.occurred_at)
        performance = round_performances(before.mu, before.sigma, days, round_, params)  # phase one's call
        after = engine.phase_two(before, performance, params, weight=row_weights(round_),
                                 time=np.full(n, round_.occurred_at))  # phase two's update
        mu_after, sigma_after = after.mu, after.sigma
        if keep_states:
            states_after = pack_batch(after)
    display = cfg.display
    current = tier_indices(stored.tiers, display)
    new_tiers = next_tier(current, mu_after, sigma_after, display)
    teams, shares = fanout_columns(round_)
    return WhatIfRows(
        players=round_.players(), ranks=round_.ranks(), teams=teams, shares=shares, known=known,
        rounds_before=before.rounds.copy(), performance=performance, mu_before=before.mu.copy(),
        sigma_before=before.sigma.copy(), mu_after=np.asarray(mu_after, dtype=float),
        sigma_after=np.asarray(sigma_after, dtype=float),
        display_before=np.where(known, display_rating(before.mu, before.sigma, display), np.nan),
        display_after=display_rating(mu_after, sigma_after, display),
        tier_before=tier_names(current, display), tier_after=tier_names(new_tiers, display), states_after=states_after)


def row_weights(round_: RoundResult) -> np.ndarray:
    """Each row's update weight as phase two computes it: the round's weight times the player's
    share of the match played (the share as the fan-out carries it; 1 for a plain round)."""
    n = round_.field_size
    weight = np.repeat(np.array([round_.weight], dtype=np.float64), n)
    _, shares = fanout_columns(round_)
    if shares is None:
        return weight
    return weight * np.fromiter((1.0 if w is None else w for w in shares), dtype=np.float64, count=n)


def tier_targets(cfg: LadderConfig, round_: RoundResult, stored: StoredStates, players: Sequence[str]) -> list[TierTarget]:
    """For each of ``players`` (in the round), the worst rank that still reaches the next tier
    and the worst that keeps the current one (module docstring). Elo-MMR ladders and rounds of
    individuals only (a team's rank moves several players; other models are not proven monotone)."""
    display = cfg.display
    names = display.tier_names
    index = {p: i for i, p in enumerate(round_.players())}
    current = tier_indices(stored.tiers, display)
    out: list[TierTarget] = []
    why = None
    if cfg.rating_model is not None:
        why = f"tier targets need an Elo-MMR ladder (this one is rated by {cfg.model!r})"
    elif is_team_round(round_):
        why = "tier targets are for rounds of individuals at full time"
    for player in players:
        i = index[player]
        tier = int(current[i])
        label = names[tier] if tier != UNPLACED else ""
        upward = tier + 1 if tier + 1 < len(names) else None
        if tier == UNPLACED:
            upward = 1 if len(names) > 1 else None
        if why is not None:
            out.append(TierTarget(player, label, None if upward is None else names[upward], None, False, None, False,
                                  available=False, reason=why))
            continue
        search = _RankSearch(cfg, round_, stored, i, tier)
        for_next = search.worst_reaching(upward) if upward is not None else None
        keep = search.worst_reaching(tier) if tier != UNPLACED else None
        out.append(TierTarget(player, label, None if upward is None else names[upward],
                              None if for_next is None else for_next[0], bool(for_next and for_next[1]),
                              None if keep is None else keep[0], bool(keep and keep[1])))
    return out


class _RankSearch:
    """The tier player ``i`` would have after the round at each position he could take: ahead of,
    tied with or behind each rank group of the others (the others' order unchanged)."""

    def __init__(self, cfg: LadderConfig, round_: RoundResult, stored: StoredStates, i: int, tier: int) -> None:
        self.cfg, self.round_, self.i, self.tier = cfg, round_, i, tier
        params = cfg.elo_mmr
        self.prior = unpack_batch(stored.states, params)
        self.own: PlayerBatch = self.prior.take(np.array([i]))
        others = np.delete(round_.ranks(), i)
        doubled = 2 * others
        # P at 2r-1 finishes just ahead of rank group r, at 2r ties it, past the last behind everyone
        self.candidates = np.unique(np.concatenate([doubled - 1, doubled, [2 * int(others.max()) + 1]]))
        self.doubled_others = doubled
        self.standings = [Standing(s.player, 2 * s.rank) for s in round_.standings]
        self.cache: dict[int, int] = {}
        self.days = engine.elapsed_days(self.prior.last_time, round_.occurred_at)

    def place(self, k: int) -> tuple[int, bool]:
        """(displayed rank, tied) of candidate k."""
        c = int(self.candidates[k])
        return 1 + int(np.count_nonzero(self.doubled_others < c)), bool(np.any(self.doubled_others == c))

    def tier_at(self, k: int) -> int:
        if k in self.cache:
            return self.cache[k]
        standings = list(self.standings)
        standings[self.i] = Standing(standings[self.i].player, int(self.candidates[k]))
        moved = dataclasses.replace(self.round_, standings=standings)
        params = self.cfg.elo_mmr
        try:  # phase one's performance for the round as it would be, then this player's phase two
            perf = performance_of(self.prior.mu, self.prior.sigma, self.days, moved.ranks(), self.i, params,
                                  weight=moved.weight, perf_ceiling=moved.perf_ceiling)
        except engine.OutcomeFree:
            self.cache[k] = self.tier  # nobody rated: the tier stays
            return self.tier
        after = engine.phase_two(self.own, np.array([perf]), params, weight=self.round_.weight,
                                 time=moved.occurred_at)
        tier = int(next_tier(np.array([self.tier]), after.mu, after.sigma, self.cfg.display)[0])
        self.cache[k] = tier
        return tier

    def worst_reaching(self, target: int) -> tuple[int, bool] | None:
        """The worst position whose tier is at least ``target`` (monotone: binary search)."""
        lo, hi = 0, len(self.candidates) - 1
        if self.tier_at(lo) < target:
            return None
        while lo < hi:  # invariant: tier_at(lo) >= target
            mid = (lo + hi + 1) // 2
            if self.tier_at(mid) >= target:
                lo = mid
            else:
                hi = mid - 1
        return self.place(lo)


def read_request(raw: bytes, ladder: str, limits: Limits, now: float) -> tuple[RoundResult, list[str]]:
    """The body's round (ids filled in) and its ``explain_for`` players; 400 with the contract's
    reason as the code (``no_outcome``, ``duplicate_player``, ``bad_weight``, ...) when it is not
    a round the stream would rate."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise WhatIfRefused("body must be a JSON object (a RoundResult's standings)", "not_json") from None
    if not isinstance(data, dict):
        raise WhatIfRefused("body must be a JSON object (a RoundResult's standings)", "not_json")
    explain = data.pop("explain_for", None) or []
    if isinstance(explain, str):
        explain = [explain]
    if not isinstance(explain, list) or not all(isinstance(p, str) for p in explain):
        raise WhatIfRefused("explain_for must be a list of player ids", "bad_explain_for")
    if len(explain) > MAX_EXPLAINED:
        raise WhatIfRefused(f"explain_for names at most {MAX_EXPLAINED} players", "bad_explain_for")
    given = data.get("ladder", ladder)
    if given != ladder:
        raise WhatIfRefused(f"the body's ladder {given!r} is not the path's {ladder!r}", "ladder_mismatch")
    data["ladder"] = ladder
    data.setdefault("round_id", ROUND_ID)
    data.setdefault("occurred_at", now)
    try:
        round_ = parse_round(data, limits=limits)
    except RoundRejected as rejected:
        raise WhatIfRefused(rejected.message + (f" (field {rejected.field})" if rejected.field else ""), rejected.reason) from None
    players = set(round_.players())
    missing = [p for p in explain if p not in players]
    if missing:
        raise WhatIfRefused(f"explain_for names {missing[0]!r}, who is not in the standings", "unknown_player")
    return round_, list(dict.fromkeys(explain))


def _floats(values: np.ndarray) -> list[float | None]:
    return [None if math.isnan(x) else x for x in values.tolist()]


def answer(cfg: LadderConfig, round_: RoundResult, rows: WhatIfRows, targets: list[TierTarget],
           interval_z: float) -> dict[str, Any]:
    """The JSON answer: per player the fields of his RatingChange-to-be, plus the interval."""
    perf: list[float | None] = [None] * len(rows.players) if rows.performance is None else rows.performance.tolist()
    mu_b, sig_b = rows.mu_before.tolist(), rows.sigma_before.tolist()
    mu_a, sig_a = rows.mu_after.tolist(), rows.sigma_after.tolist()
    shown_b, shown_a = _floats(rows.display_before), rows.display_after.tolist()
    known, played = rows.known.tolist(), (rows.rounds_before + 1).tolist()
    ranks = rows.ranks.tolist()
    teams = rows.teams or [None] * len(rows.players)
    shares: list[float | None] = list(rows.shares) if rows.shares is not None else [None] * len(rows.players)
    # provisional right after the round, by the rule its RatingChange carries
    provisional = is_provisional(rows.sigma_after, rows.rounds_before + 1, cfg.display).tolist()
    delta = (rows.mu_after - rows.mu_before).tolist()
    shown_delta = _floats(rows.display_after - rows.display_before)
    low = (rows.mu_after - interval_z * rows.sigma_after).tolist()
    high = (rows.mu_after + interval_z * rows.sigma_after).tolist()
    tiers_b = [t or None for t in rows.tier_before]
    tiers_a = [t or None for t in rows.tier_after]
    changes = [
        {"player": p, "rank": rank, "team": team, "weight": share, "known": k, "rounds_played": n,
         "provisional": prov, "performance": pf, "mu_before": mb, "sigma_before": sb, "mu_after": ma,
         "sigma_after": sa, "delta": d, "display_before": db, "display_rating": da, "display_delta": dd,
         "tier_before": tb, "tier": ta, "interval": [lo, hi]}
        for p, rank, team, share, k, n, pf, mb, sb, ma, sa, d, db, da, dd, tb, ta, prov, lo, hi in zip(
            rows.players, ranks, teams, shares, known, played, perf, mu_b, sig_b, mu_a, sig_a, delta, shown_b, shown_a,
            shown_delta, tiers_b, tiers_a, provisional, low, high)]
    return {
        "ladder": round_.ladder, "round_id": round_.round_id, "occurred_at": round_.occurred_at,
        "weight": round_.weight, "field_size": round_.field_size, "model": cfg.model, "writes": False,
        "display": cfg.display.to_dict(), "interval_z": interval_z, "changes": changes,
        "targets": [dataclasses.asdict(t) for t in targets],
    }


async def ask(r: AsyncRedis, cfg: LadderConfig, ladder: str, raw: bytes, limits: Limits, now: float) -> dict[str, Any]:
    """One what-if request's answer (the API's and ``stream what-if``'s): read, check, load, rate,
    tier targets; :class:`WhatIfRefused` for input the stream would not rate."""
    round_, explain = read_request(raw, ladder, limits, now)
    try:
        check_round(round_, cfg)
    except RoundRejected as rejected:
        raise WhatIfRefused(rejected.message, rejected.reason) from None
    stored = await load(r, ladder, round_.players())
    try:
        rows = rate(cfg, round_, stored)
        targets = tier_targets(cfg, round_, stored, explain) if explain else []
    except engine.OutcomeFree as exc:
        raise WhatIfRefused(str(exc), NO_OUTCOME) from None
    out = answer(cfg, round_, rows, targets, cfg.display.interval_z)
    out["in_flight"] = in_flight(round_, stored)
    return out


def in_flight(round_: RoundResult, stored: StoredStates) -> list[str]:
    """The players with a round rated by phase one but not yet applied (``queued_seq`` above
    ``last_seq``): the what-if rates them from the state before it, so the stream will differ for
    them (and for those they played against) until it is applied."""
    if stored.queued_seq is None:
        return []
    players = round_.players()
    return [players[i] for i in np.flatnonzero(stored.queued_seq > stored.last_seq).tolist()]
