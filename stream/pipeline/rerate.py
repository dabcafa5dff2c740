"""Re-rate a ladder's whole history in process, keeping what every participation produced.

A correction (``corrections.py``) cannot start from stored states before the corrected round, so
the ladder is rated again from its first round with the replay's engine path (``rate_flat`` on a
:class:`LadderTable`, in the chunks of :mod:`stream.batch.replay`), keeping per participation what
the stream writes (performance, rating before and after, rounds played, display rating, tier).
A rating-only model's ladder is re-rated by :func:`rerate_model`, one round at a time with phase
one's and phase two's calls (``batch.models.rate_one``, ``rating_models.apply``), as ``stream backfill`` rates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from stream.batch.models import rate_one
from stream.batch.replay import CHUNK_PARTICIPATIONS, CHUNK_ROUNDS, occurrence, round_spec
from stream.batch.table import LadderTable
from stream.contracts import RoundResult, Standing
from stream.engine import Params, rate_flat
from stream.engine.teams import rate_rounds_with_teams
from stream.engine.display import UNPLACED, DisplayConfig, display_rating, is_provisional, league_division, next_tier, tier_names
from stream.engine.season_schedule import entering
from stream.engine.seasons import season_next_tier
from stream.engine.ladders import LadderConfig
from stream.engine.ratings import Ratings
from stream.pipeline import rating_models
from stream.contracts.encoding import ChangeColumns, encode_changes_of_rounds, entry_texts, number_texts, update_head
from stream.pipeline.messages import partition_messages, value_limit
from stream.pipeline.teams import fanout_columns


@dataclass(frozen=True, slots=True)
class HistoryRound:
    """A round of a ladder's (corrected) history, with an outcome, and its ladder sequence number:
    what the stored fan-out (or an amendment) holds of it, players in standings order."""

    round_id: str
    seq: int
    occurred_at: float
    weight: float
    perf_ceiling: float
    players: list[str]
    ranks: list[int]
    teams: list[str | None] | None = None
    shares: list[float] | None = None
    """Each player's team and share of the match played (None, None: a plain round)."""
    ordered: bool = True
    """False when the order within a tie may differ from the standings (a tie split across fan-out
    messages): TrueSkill's ratings depend on it (``corrections.py``)."""

    @classmethod
    def of(cls, round_: RoundResult, seq: int) -> "HistoryRound":
        teams, shares = fanout_columns(round_)
        return cls(round_.round_id, seq, round_.occurred_at, round_.weight, round_.perf_ceiling, round_.players(),
                   round_.ranks().tolist(), teams, shares)

    def to_round(self, ladder: str) -> RoundResult:
        teams = self.teams or [None] * len(self.players)
        shares = self.shares or [1.0] * len(self.players)
        return RoundResult(round_id=self.round_id, ladder=ladder, occurred_at=self.occurred_at,
                           standings=[Standing(p, r, t, w) for p, r, t, w in zip(self.players, self.ranks, teams, shares)],
                           weight=self.weight, perf_ceiling=self.perf_ceiling)



@dataclass
class Rerated:
    """The rated history: per participation (round k holds ``offsets[k]:offsets[k + 1]``, players
    in standings order) its table row and what it produced; per table row the final tier."""

    table: LadderTable
    rounds: Sequence[HistoryRound]
    offsets: np.ndarray
    players: list[str]
    rows: np.ndarray
    ranks: np.ndarray
    performance: np.ndarray
    mu_before: np.ndarray
    sigma_before: np.ndarray
    mu_after: np.ndarray
    sigma_after: np.ndarray
    rounds_played: np.ndarray
    shown: np.ndarray
    tier: np.ndarray
    final_tier: np.ndarray
    last: np.ndarray
    """Per table row: index of the player's last participation."""
    no_performance: bool = False
    """A rating-only model without a performance: ``performance`` holds the new mu, events say null."""
    previous: np.ndarray | None = None
    """Rating-only models: per participation, the player's previous participation (-1: none)."""

    def round_of(self) -> np.ndarray:
        """Per participation: its round's index in ``rounds``."""
        return np.repeat(np.arange(len(self.rounds)), np.diff(self.offsets))


def _blank(history: Sequence[HistoryRound], newcomer: Params) -> Rerated:
    """The history's participations on a table of newcomers, their columns to fill (``shown`` last)."""
    sizes = np.fromiter((len(h.players) for h in history), dtype=np.int64, count=len(history))
    players = [p for h in history for p in h.players]
    ranks = np.fromiter((r for h in history for r in h.ranks), dtype=np.int64, count=len(players))
    table, n = LadderTable(newcomer), len(players)
    return Rerated(table=table, rounds=history, offsets=np.concatenate(([0], np.cumsum(sizes))), players=players,
                   rows=table.rows(players), ranks=ranks, performance=np.empty(n), mu_before=np.empty(n),
                   sigma_before=np.empty(n), mu_after=np.empty(n), sigma_after=np.empty(n),
                   rounds_played=np.empty(n, dtype=np.int64), shown=np.empty(0), tier=np.empty(n, dtype=np.int64),
                   final_tier=np.full(table.size, UNPLACED, dtype=np.int64),
                   last=np.full(table.size, -1, dtype=np.int64))


def rerate(history: Sequence[HistoryRound], params: Params, cfg: DisplayConfig) -> Rerated:
    """Rate ``history`` (rounds with an outcome, in order) from newcomers; see the module docstring."""
    r = _blank(history, params)
    table, offsets, rows, ranks, tier, row_tier = r.table, r.offsets, r.rows, r.ranks, r.tier, r.final_tier
    sizes = np.diff(offsets)
    times = np.fromiter((h.occurred_at for h in history), dtype=float, count=len(history))
    weights = np.fromiter((h.weight for h in history), dtype=float, count=len(history))
    ceilings = np.fromiter((h.perf_ceiling for h in history), dtype=float, count=len(history))
    for a, b in _chunks(sizes):
        lo, hi = int(offsets[a]), int(offsets[b])
        touched, local = np.unique(rows[lo:hi], return_inverse=True)
        prior = table.gather(touched)
        if any(history[k].shares is not None for k in range(a, b)):  # teams or partial play in the chunk
            specs = [round_spec(history[k].to_round("-"), local[offsets[k] - lo:offsets[k + 1] - lo])
                     for k in range(a, b)]
            update = rate_rounds_with_teams(prior, specs, params)
        else:
            update = rate_flat(prior, local.astype(np.int64, copy=False), ranks[lo:hi], offsets[a:b + 1] - lo,
                               times[a:b], weights[a:b], ceilings[a:b], params)  # = rate_rounds of the chunk's rounds
        table.scatter(touched, update.after)
        prev = update.previous
        has_prev = prev >= 0
        r.performance[lo:hi] = update.performance
        r.mu_after[lo:hi], r.sigma_after[lo:hi] = update.mu, update.sigma
        r.mu_before[lo:hi] = np.where(has_prev, update.mu[np.maximum(prev, 0)], prior.mu[local])
        r.sigma_before[lo:hi] = np.where(has_prev, update.sigma[np.maximum(prev, 0)], prior.sigma[local])
        seen = occurrence(local)
        r.rounds_played[lo:hi] = prior.rounds[local] + seen + 1
        chunk_rows = rows[lo:hi]
        starting = np.zeros(hi - lo, dtype=bool)  # whether the round starts a new season for the player
        if params.season is not None:
            when = np.repeat(times[a:b], sizes[a:b])
            starting = entering(np.where(has_prev, when[np.maximum(prev, 0)], prior.last_time[local]), when,
                                params.season)
        for k in range(int(seen.max(initial=-1)) + 1):  # each player's rounds in order (hysteresis)
            at = np.flatnonzero(seen == k)
            moved = season_next_tier(row_tier[chunk_rows[at]], starting[at], update.mu[at], update.sigma[at], cfg,
                                     params.season)
            tier[lo + at] = moved
            row_tier[chunk_rows[at]] = moved
    r.last[rows] = np.arange(len(rows))  # the last assignment of a repeated index wins: the latest participation
    r.shown = display_rating(r.mu_after, r.sigma_after, cfg)
    return r


def rerate_model(history: Sequence[HistoryRound], cfg: LadderConfig, display: DisplayConfig) -> Rerated:
    """Rate ``history`` from newcomers with the ladder's rating-only model, one round at a time."""
    model = cfg.rating_model
    if model is None:
        raise TypeError(f"ladder model {cfg.model!r} is an Elo-MMR preset, not a rating-only model")
    r = _blank(history, cfg.newcomer)
    r.no_performance, r.previous = not model.performs, np.empty(len(r.players), dtype=np.int64)
    table, offsets, rows, last = r.table, r.offsets, r.rows, r.last
    for k, h in enumerate(history):
        lo, hi = int(offsets[k]), int(offsets[k + 1])
        at = rows[lo:hi]
        before = table.gather(at)
        update = rate_one(model, cfg.model_params, Ratings(before.mu, before.sigma, before.rounds), h.to_round(""))
        after = rating_models.apply(before, update.after.mu, update.after.sigma, np.full(hi - lo, h.occurred_at))
        table.scatter(at, after)
        r.mu_before[lo:hi], r.sigma_before[lo:hi] = before.mu, before.sigma
        r.mu_after[lo:hi], r.sigma_after[lo:hi] = after.mu, after.sigma
        r.performance[lo:hi] = after.mu if update.performance is None else update.performance
        r.rounds_played[lo:hi] = after.rounds
        moved = next_tier(r.final_tier[at], after.mu, after.sigma, display)
        r.tier[lo:hi] = moved
        r.final_tier[at] = moved
        r.previous[lo:hi] = last[at]
        last[at] = np.arange(lo, hi)
    r.shown = display_rating(r.mu_after, r.sigma_after, display)
    return r


def _chunks(sizes: np.ndarray) -> list[tuple[int, int]]:
    """Round index ranges of the engine calls (at most CHUNK_ROUNDS rounds, CHUNK_PARTICIPATIONS
    participations unless a single round is larger), as ``stream.batch.replay`` cuts them."""
    out: list[tuple[int, int]] = []
    a = total = 0
    for k, size in enumerate(sizes.tolist()):
        total += size
        if k + 1 - a >= CHUNK_ROUNDS or total >= CHUNK_PARTICIPATIONS:
            out.append((a, k + 1))
            a, total = k + 1, 0
    if a < len(sizes):
        out.append((a, len(sizes)))
    return out


@dataclass(frozen=True)
class Texts:
    """Every participation's floats as their stored text (rendered once, :func:`number_texts`)."""

    performance: list[str]
    mu_before: list[str]
    sigma_before: list[str]
    mu_after: list[str]
    sigma_after: list[str]
    shown: list[str]
    tiers: list[str]

    @classmethod
    def of(cls, r: Rerated, cfg: DisplayConfig, at: np.ndarray) -> "Texts":
        """The texts of the participations ``at`` (in that order)."""
        performance = ["null"] * len(at) if r.no_performance else number_texts("performance", r.performance[at])
        return cls(performance, number_texts("mu_before", r.mu_before[at]),
                   number_texts("sigma_before", r.sigma_before[at]), number_texts("mu_after", r.mu_after[at]),
                   number_texts("sigma_after", r.sigma_after[at]), number_texts("display_rating", r.shown[at]),
                   tier_names(r.tier[at], cfg))


def encode_changes(r: Rerated, ladder: str, at: np.ndarray, texts: Texts,
                   display: DisplayConfig | None = None) -> list[bytes]:
    """The RatingChange JSON of the participations ``at`` (in round order), byte for byte phase
    two's (``display``: for league, division and provisional; None: neither written)."""
    round_of = r.round_of()[at]
    ks = np.unique(round_of)
    local = np.searchsorted(ks, round_of).tolist()
    rounds = [r.rounds[k] for k in ks.tolist()]
    teams: list[str | None] | None = None
    weights: list[str | None] | None = None
    if any(h.shares is not None for h in rounds):  # rounds with teams or partial play: team and weight
        offsets, index = r.offsets.tolist(), at.tolist()
        by_k = r.round_of()[at].tolist()
        teams = [None if r.rounds[k].teams is None else r.rounds[k].teams[i - offsets[k]]
                 for k, i in zip(by_k, index)]
        shares = [None if r.rounds[k].shares is None else r.rounds[k].shares[i - offsets[k]]
                  for k, i in zip(by_k, index)]
        texts_w = number_texts("weight", np.array([1.0 if w is None else w for w in shares]))
        weights = [None if w is None else t for w, t in zip(shares, texts_w)]
    return encode_changes_of_rounds(
        ladder, [h.round_id for h in rounds], [len(h.players) for h in rounds], [h.occurred_at for h in rounds], local,
        ChangeColumns(ladder=ladder, round_id="", field_size=0, occurred_at=0.0,
                      players=[r.players[i] for i in at.tolist()], ranks=r.ranks[at].tolist(),
                      performance=texts.performance, mu_before=texts.mu_before, sigma_before=texts.sigma_before,
                      mu_after=texts.mu_after, sigma_after=texts.sigma_after, display_rating=texts.shown,
                      tiers=texts.tiers, rounds_played=r.rounds_played[at].tolist(),
                      placement=None if display is None else partial(league_division, cfg=display), teams=teams,
                      weights=weights, provisional=None if display is None else
                      is_provisional(r.sigma_after[at], r.rounds_played[at], display).tolist()))


def encode_fanouts(r: Rerated, ladder: str, ks: Sequence[int], partitions: int,
                   max_message_bytes: int) -> list[list[tuple[int, bytes]]]:
    """The stored fan-out of each round ``ks`` as (partition, PlayerUpdate JSON) pairs, phase one's
    bytes (``messages.partition_messages``). A rating-only model's entries name their prior's round
    (``previous_seq``, 0: a newcomer) and the new rating."""
    bounds = [(int(r.offsets[k]), int(r.offsets[k + 1])) for k in ks]
    at = np.concatenate([np.arange(lo, hi) for lo, hi in bounds]) if bounds else np.zeros(0, dtype=np.int64)
    texts = number_texts("performance", r.performance[at])
    previous: list[int] | None = None
    ratings: tuple[list[str], list[str]] | None = None
    if r.previous is not None:
        seq_of = np.fromiter((h.seq for h in r.rounds), dtype=np.int64, count=len(r.rounds))
        before = r.previous[at]
        previous = np.where(before >= 0, seq_of[r.round_of()[np.maximum(before, 0)]], 0).tolist()
        ratings = number_texts("mu_after", r.mu_after[at]), number_texts("sigma_after", r.sigma_after[at])
    heads: list[str] = []
    entries: list[str] = []
    flat: list[str] = []
    for k, (lo, hi) in zip(ks, bounds):
        h = r.rounds[k]
        heads.append(update_head(ladder, h.round_id, h.seq, h.occurred_at, h.weight, hi - lo))
        s, e = len(flat), len(flat) + hi - lo
        entries += entry_texts(h.players, h.ranks, texts[s:e], None if previous is None else previous[s:e],
                               None if ratings is None else (ratings[0][s:e], ratings[1][s:e]), teams=h.teams,
                               weight_texts=None if h.shares is None else number_texts("weight", np.asarray(h.shares)))
        flat += h.players
    cuts = np.cumsum([0, *(hi - lo for lo, hi in bounds)]).tolist()
    out = partition_messages(heads, entries, flat, cuts, partitions, value_limit(max_message_bytes))
    return [[(m.partition, m.value) for m in messages] for messages in out]
