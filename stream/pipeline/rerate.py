"""Re-rate a ladder's whole history in process, keeping what every participation produced.

A correction (``corrections.py``) replaces part of a ladder's history; the players' states just
before the corrected round are not stored, so the ladder is rated again from its first round
with the replay's engine path (:func:`stream.engine.rate_rounds` on a :class:`LadderTable`, in
the chunks of :mod:`stream.batch.replay`, the reference the stream equals), keeping per
participation what the stream writes: performance, rating before and after, rounds played,
display rating and tier (the tier's hysteresis follows each player's rounds in order). The caller
then writes only the part of it that the correction changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from stream.batch.replay import CHUNK_PARTICIPATIONS, CHUNK_ROUNDS
from stream.batch.table import LadderTable
from stream.contracts import RoundResult
from stream.engine import Params, RoundSpec, rate_rounds
from stream.engine.display import UNPLACED, DisplayConfig, display_rating, next_tier, tier_names
from stream.pipeline.encoding import ChangeColumns, encode_changes, number_texts


@dataclass(frozen=True)
class HistoryRound:
    """A round of a ladder's (corrected) history and its ladder sequence number."""

    round: RoundResult
    seq: int


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

    def round_of(self) -> np.ndarray:
        """Per participation: its round's index in ``rounds``."""
        return np.repeat(np.arange(len(self.rounds)), np.diff(self.offsets))


def rerate(history: Sequence[HistoryRound], params: Params, cfg: DisplayConfig) -> Rerated:
    """Rate ``history`` (rounds with an outcome, in order) from newcomers; see the module docstring."""
    sizes = np.fromiter((h.round.field_size for h in history), dtype=np.int64, count=len(history))
    offsets = np.zeros(len(history) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    players = [s.player for h in history for s in h.round.standings]
    ranks = np.fromiter((s.rank for h in history for s in h.round.standings), dtype=np.int64, count=len(players))
    table = LadderTable(params)
    rows = table.rows(players)
    n = len(players)
    performance, mu_b, sigma_b, mu_a, sigma_a = (np.empty(n) for _ in range(5))
    played = np.empty(n, dtype=np.int64)
    tier = np.empty(n, dtype=np.int64)
    row_tier = np.full(table.size, UNPLACED, dtype=np.int64)
    for a, b in _chunks(sizes):
        lo, hi = int(offsets[a]), int(offsets[b])
        touched, local = np.unique(rows[lo:hi], return_inverse=True)
        specs = [RoundSpec(local[offsets[k] - lo:offsets[k + 1] - lo], ranks[offsets[k]:offsets[k + 1]],
                           time=history[k].round.occurred_at, weight=history[k].round.weight,
                           perf_ceiling=history[k].round.perf_ceiling) for k in range(a, b)]
        prior = table.gather(touched)
        update = rate_rounds(prior, specs, params)
        table.scatter(touched, update.after)
        prev = update.previous
        has_prev = prev >= 0
        performance[lo:hi] = update.performance
        mu_a[lo:hi], sigma_a[lo:hi] = update.mu, update.sigma
        mu_b[lo:hi] = np.where(has_prev, update.mu[np.maximum(prev, 0)], prior.mu[local])
        sigma_b[lo:hi] = np.where(has_prev, update.sigma[np.maximum(prev, 0)], prior.sigma[local])
        occurrence = _occurrence(local)
        played[lo:hi] = prior.rounds[local] + occurrence + 1
        chunk_rows = rows[lo:hi]
        for k in range(int(occurrence.max(initial=-1)) + 1):  # each player's rounds in order (hysteresis)
            at = np.flatnonzero(occurrence == k)
            moved = next_tier(row_tier[chunk_rows[at]], update.mu[at], update.sigma[at], cfg)
            tier[lo + at] = moved
            row_tier[chunk_rows[at]] = moved
    last = np.full(table.size, -1, dtype=np.int64)
    last[rows] = np.arange(n)  # the last assignment of a repeated index wins: the latest participation
    return Rerated(table=table, rounds=history, offsets=offsets, players=players, rows=rows, ranks=ranks,
                   performance=performance, mu_before=mu_b, sigma_before=sigma_b, mu_after=mu_a, sigma_after=sigma_a,
                   rounds_played=played, shown=display_rating(mu_a, sigma_a, cfg), tier=tier, final_tier=row_tier,
                   last=last)


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


def _occurrence(local: np.ndarray) -> np.ndarray:
    """For each participation, how many earlier participations of the same player the chunk holds."""
    order = np.argsort(local, kind="stable")
    first = np.ones(local.shape[0], dtype=bool)
    first[1:] = local[order[1:]] != local[order[:-1]]
    starts = np.flatnonzero(first)
    out = np.empty(local.shape[0], dtype=np.int64)
    out[order] = np.arange(local.shape[0]) - np.repeat(starts, np.diff(np.append(starts, local.shape[0])))
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
        return cls(number_texts("performance", r.performance[at]), number_texts("mu_before", r.mu_before[at]),
                   number_texts("sigma_before", r.sigma_before[at]), number_texts("mu_after", r.mu_after[at]),
                   number_texts("sigma_after", r.sigma_after[at]), number_texts("display_rating", r.shown[at]),
                   tier_names(r.tier[at], cfg))


def round_changes(r: Rerated, ladder: str, k: int, at: np.ndarray, texts: Texts, cut: slice) -> list[bytes]:
    """The RatingChange JSON of round ``k``'s participations ``at`` (global indices; their texts are
    ``texts`` rows ``cut``), byte for byte what phase two writes."""
    round_ = r.rounds[k].round
    return encode_changes(ChangeColumns(
        ladder=ladder, round_id=round_.round_id, field_size=round_.field_size, occurred_at=round_.occurred_at,
        players=[r.players[i] for i in at.tolist()], ranks=r.ranks[at].tolist(), performance=texts.performance[cut],
        mu_before=texts.mu_before[cut], sigma_before=texts.sigma_before[cut], mu_after=texts.mu_after[cut],
        sigma_after=texts.sigma_after[cut], display_rating=texts.shown[cut], tiers=texts.tiers[cut],
        rounds_played=r.rounds_played[at].tolist()))
