"""What-if: what a round would do to its players' ratings, from the live state, writing nothing.

A contest's live scoreboard (partial or hypothetical) is rated exactly as the stream would rate
it as the ladder's next round: the same parse and support check as phase one
(``contracts.parse_round``, ``batch.models.support``), the players' stored packed states read in
one round trip (``Store.read_states``: HMGETs, read-only commands, the fields phase two reads;
newcomers get the ladder model's prior),
then phase one's engine call (:func:`stream.pipeline.teams.round_performances` for Elo-MMR
ladders, teams and partial play included: the call of phase one's one-round path, equal to its
batch path's ``rate_ladder_rounds``; :func:`stream.pipeline.rating_models.rate_rounds` for
rating-only models) and phase two's update (``engine.phase_two`` with the row weight ``round
weight x share played``, or ``rating_models.apply``), and the display rules phase two applies
(``engine.display.display_rating`` and ``engine.seasons.season_next_tier`` from the stored tier: a
season's placement, then the confident rule). The floats are the
ones the stream then writes for the same round if nobody's state moves in between (the
pipeline's fan-out carries each float as its ``repr`` text, which reads back to the same float).

Tier targets (:func:`tier_targets`): the rank a named player needs to reach the next tier, and to
keep his current one: the worst of the positions his entry could take (ahead of, tied with or
behind each rank group of the other entries; a team moves as a whole) whose tier after the round
still reaches it.

* Elo-MMR, a round of individuals: the rating is monotone in rank (paper, Theorem 5.5) and sigma
  after a round does not depend on the outcome (Eq. 8), so the tier after the round is monotone in
  rank too and a binary search finds it: about 2 log2(N) evaluations of that player's phase-one
  performance (``engine.performance.performance_of``, his tie group's equation alone) and of his
  phase two (``search`` "bisect").
* Elo-MMR, a round with teams or partial play: a team's performance is monotone in its rank and
  each member's update in that performance (sigma again outcome-free), so the same binary search,
  each evaluation the whole round rated as the stream would (:func:`rate`; rounds up to
  :data:`MAX_FULL_TARGET_PLAYERS` players).
* A rating-only model (Glicko, TrueSkill, ...): its sigma after a round may depend on the outcome,
  so the tier is not proven monotone in rank: every position is evaluated (``search`` "scan", the
  whole round rated each time) while there are at most :data:`MAX_SCANNED_POSITIONS`; beyond, the
  binary search, which assumes monotonicity (``search`` "bisect").
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
from stream.batch.models import support
from stream.contracts import RoundResult
from stream.contracts.round import NO_OUTCOME, Limits, RoundRejected, check_supported, parse_round
from stream.engine.display import UNPLACED, display_rating, is_provisional, tier_indices, tier_names
from stream.engine.season_schedule import entering
from stream.engine.seasons import season_next_tier, seasoned_view
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
MAX_FULL_TARGET_PLAYERS = 2_000
"""Largest round whose tier targets rate the whole round per evaluation (teams, rating-only models)."""
MAX_SCANNED_POSITIONS = 129
"""A rating-only model's targets evaluate every position up to this many (a round of 64 entries)."""


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
    search: str | None = None
    """"bisect" (the tier is monotone in rank: binary search) or "scan" (every position evaluated)."""


def check_round(round_: RoundResult, cfg: LadderConfig) -> None:
    """Phase one's support check (``check_supported``): RoundRejected as the stream would dead-letter it."""
    check_supported(round_, support(cfg.model), "the stream")


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
    seasons = cfg.seasons  # the round starts a new season for whom (phase two's placement rule)
    starting = np.zeros(n, dtype=bool) if seasons is None else \
        entering(before.last_time.copy(), np.full(n, round_.occurred_at), seasons)
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
        performance = round_performances(before.mu, before.sigma, before.last_time, round_, params)  # phase one's call
        after = engine.phase_two(before, performance, params, weight=row_weights(round_),
                                 time=np.full(n, round_.occurred_at))  # phase two's update
        mu_after, sigma_after = after.mu, after.sigma
        if keep_states:
            states_after = pack_batch(after)
    display = cfg.display
    current = tier_indices(stored.tiers, display)
    new_tiers = season_next_tier(current, starting, mu_after, sigma_after, display, seasons)
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
    and the worst that keeps the current one (module docstring)."""
    display = cfg.display
    names = display.tier_names
    index = {p: i for i, p in enumerate(round_.players())}
    current = tier_indices(stored.tiers, display)
    fast = cfg.rating_model is None and not is_team_round(round_)
    why = None
    if not fast and round_.field_size > MAX_FULL_TARGET_PLAYERS:
        why = (f"tier targets of a round with teams or partial play, or of a rating-only model, rate the whole "
               f"round per position: rounds of at most {MAX_FULL_TARGET_PLAYERS} players")
    out: list[TierTarget] = []
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
        search: _Positions = _RankSearch(cfg, round_, stored, i, tier) if fast else _RoundSearch(cfg, round_, stored, i)
        scan = cfg.rating_model is not None and len(search.candidates) <= MAX_SCANNED_POSITIONS
        for_next = search.worst_reaching(upward, scan) if upward is not None else None
        keep = search.worst_reaching(tier, scan) if tier != UNPLACED else None
        out.append(TierTarget(player, label, None if upward is None else names[upward],
                              None if for_next is None else for_next[0], bool(for_next and for_next[1]),
                              None if keep is None else keep[0], bool(keep and keep[1]),
                              search="scan" if scan else "bisect"))
    return out


class _Positions:
    """The positions player ``i``'s entry could take among the other entries' rank groups (ahead
    of, tied with or behind each; the others' order unchanged), as doubled ranks: at ``2r - 1`` it
    finishes just ahead of rank group r, at ``2r`` it ties it, past the last behind everyone."""

    candidates: np.ndarray
    tier: int

    def __init__(self, round_: RoundResult, i: int) -> None:
        entry, entry_ranks = round_.entries()
        own = int(entry[i])
        self.members = np.flatnonzero(entry == own)  # the player, or his whole team
        doubled = 2 * np.delete(entry_ranks, own)
        self.candidates = np.unique(np.concatenate([doubled - 1, doubled, [int(doubled.max()) + 1]]))
        self.doubled_others = doubled
        self.doubled = 2 * round_.ranks()
        self.cache: dict[int, int] = {}

    def ranks_at(self, k: int) -> np.ndarray:
        """Every player's doubled rank with the entry at candidate ``k`` (only the order matters)."""
        ranks = self.doubled.copy()
        ranks[self.members] = self.candidates[k]
        return ranks

    def place(self, k: int) -> tuple[int, bool]:
        """(displayed rank, tied) of candidate k: 1 + the other entries ahead, and whether one ties."""
        c = int(self.candidates[k])
        return 1 + int(np.count_nonzero(self.doubled_others < c)), bool(np.any(self.doubled_others == c))

    def tier_at(self, k: int) -> int:
        if k not in self.cache:
            self.cache[k] = self._tier(k)
        return self.cache[k]

    def _tier(self, k: int) -> int:
        raise NotImplementedError

    def worst_reaching(self, target: int, scan: bool = False) -> tuple[int, bool] | None:
        """The worst position whose tier is at least ``target``: every position evaluated
        (``scan``), or a binary search (the tier monotone in rank)."""
        if scan:
            reaching = [k for k in range(len(self.candidates)) if self.tier_at(k) >= target]
            return self.place(reaching[-1]) if reaching else None
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


class _RankSearch(_Positions):
    """Elo-MMR, a round of individuals: the player's own phase one and phase two at each position."""

    def __init__(self, cfg: LadderConfig, round_: RoundResult, stored: StoredStates, i: int, tier: int) -> None:
        super().__init__(round_, i)
        self.cfg, self.round_, self.i, self.tier = cfg, round_, i, tier
        self.prior = unpack_batch(stored.states, cfg.elo_mmr)
        self.own: PlayerBatch = self.prior.take(np.array([i]))
        self.days = engine.elapsed_days(self.prior.last_time, round_.occurred_at)
        self.mu, self.sigma = seasoned_view(self.prior.mu, self.prior.sigma, self.prior.last_time, round_.occurred_at,
                                            cfg.elo_mmr)  # phase one's prior: a new season's reset
        seasons = cfg.seasons
        self.starting = np.zeros(1, dtype=bool) if seasons is None else \
            entering(self.own.last_time.copy(), np.full(1, round_.occurred_at), seasons)

    def _tier(self, k: int) -> int:
        params = self.cfg.elo_mmr
        try:  # phase one's performance for the round as it would be, then this player's phase two
            perf = performance_of(self.mu, self.sigma, self.days, self.ranks_at(k), self.i, params,
                                  weight=self.round_.weight, perf_ceiling=self.round_.perf_ceiling)
        except engine.OutcomeFree:
            return self.tier  # nobody rated: the tier stays
        after = engine.phase_two(self.own, np.array([perf]), params, weight=self.round_.weight,
                                 time=self.round_.occurred_at)
        return int(season_next_tier(np.array([self.tier]), self.starting, after.mu, after.sigma, self.cfg.display,
                                    self.cfg.seasons)[0])


class _RoundSearch(_Positions):
    """A round with teams or partial play, or a rating-only model: the whole round rated as the
    stream would (:func:`rate`) at each position, the player's tier read from it."""

    def __init__(self, cfg: LadderConfig, round_: RoundResult, stored: StoredStates, i: int) -> None:
        super().__init__(round_, i)
        self.cfg, self.round_, self.stored, self.i = cfg, round_, stored, i
        self.tier = int(tier_indices([stored.tiers[i]], cfg.display)[0])

    def _tier(self, k: int) -> int:
        ranks = _competition(self.ranks_at(k)).tolist()
        moved = dataclasses.replace(self.round_, standings=[dataclasses.replace(s, rank=r)
                                                            for s, r in zip(self.round_.standings, ranks)])
        try:
            rows = rate(self.cfg, moved, self.stored)
        except engine.OutcomeFree:
            return self.tier
        return int(tier_indices([rows.tier_after[self.i]], self.cfg.display)[0])


def _competition(doubled: np.ndarray) -> np.ndarray:
    """Competition ranks (1 + the players strictly ahead) of ranks given in any order-preserving
    scale: a model that reads rank values (not only their order) gets the ranks of the contract."""
    return (np.searchsorted(np.sort(doubled), doubled, side="left") + 1).astype(np.int64)


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
