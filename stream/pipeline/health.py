"""Rating health per ladder, online: each round scored by the ratings before it (README "Rating health").

Phase one rates a ladder's rounds of a batch in one engine call from the priors it read; just
after that call (``phase_one._rate_ladder``, the only hook) :meth:`RatingHealth.score` keeps
references to the call's prior and result; :meth:`RatingHealth.score_due` (after the batch's
fan-out is stored: CPU only) and :meth:`RatingHealth.flush` (a once-a-second timer, which also
records) score the kept calls in bulk once :data:`FLUSH_ROUNDS` rounds are kept or the oldest is
:data:`FLUSH_S` old: every round *before its update*, from each
participant's mu, sigma and rounds played just before the round (``batch.replay.before_rounds``,
as ``stream evaluate`` does):

* the paper's pair accuracy and rank deviation, for everyone already rated and for experienced
  players (``batch.metrics.score_rounds``: the same function, same inputs, as ``stream evaluate``,
  so a ladder's cumulative figures equal its ``--score-from 0`` figures within 1e-9);
* the log-loss of the pairwise win probabilities (every pair with distinct ranks, of at most
  :data:`MAX_PAIR_PLAYERS` players evenly spread over the standings in larger rounds; the
  closed form of ``engine.odds``) and their reliability: per bin of the favourite's predicted
  probability, pairs, wins and predicted wins (the calibration diagram; the expected
  calibration error is sum |wins - predicted| / pairs);
* the participants' mean and median mu and the share of provisional ones (fewer than
  ``EXPERIENCED_MIN_ROUNDS`` earlier rounds); the pool's mean mu (every player ever rated:
  its sum moves by each batch's posterior minus prior mu, plus newcomers);
* "rapid climbers": a player whose performance sits above their mu before the round (by at least
  :data:`CLIMB_Z` sd, sqrt(sigma^2 + beta^2)) :data:`CLIMB_ROUNDS` rounds in a row, the last one
  :data:`CLIMB_GAIN_BETAS` betas or more above the mu the streak began at (a new account playing
  like a veteran: Elo-MMR moves a newcomer fast, so each round's surprise shrinks while the climb
  goes on). Flagged once per streak; streaks live in this worker's memory (a rebalance restarts
  them); each flag is an event, stored in ``ems:climbers:{L}``, logged, counted and served by the API.

:meth:`RatingHealth.flush` then records the scored rounds through ``store.health`` (one script per ladder, skipping rounds at or below the ladder's last scored seq:
a redelivered or retried round counts once), which keeps the cumulative sums and those of the last
HEALTH_WINDOW rounds. Ladders with a rating-only model are not scored. Corrections re-rate history without re-scoring it.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stream import engine
from stream.batch.metrics import EXPERIENCED_MIN_ROUNDS, SCORES, score_rounds
from stream.batch.replay import before_rounds
from stream.contracts import RoundResult
from stream.engine.odds import approx_win_probability
from stream.engine.predict import PerformanceModel
from stream.logsafe import log_safe
from stream.pipeline.metrics import HEALTH_CPU_SECONDS
from stream.store.client import AsyncRedis
from stream.store.health import BINS, FIELDS, Climber, HealthStore, ScoredRounds

log = logging.getLogger(__name__)

MAX_PAIR_PLAYERS = 64
"""Larger rounds score the pairs of this many players, evenly spread over the standings."""
CLIMB_Z = 0.25
"""A round counts in a climb when the performance is this many sd (sqrt(sigma^2 + beta^2)) above mu."""
CLIMB_ROUNDS = 3
"""Rounds in a row a climb needs ..."""
CLIMB_GAIN_BETAS = 1.5
"""... and how far (in betas) the last performance must sit above the mu the streak began at."""
NEW_ACCOUNT_ROUNDS = 10
"""Only rounds a player plays with fewer earlier rounds than this count in a climb (a new account)."""
FLUSH_ROUNDS = 256
FLUSH_S = 1.0
"""Rounds are scored in bulk once FLUSH_ROUNDS are kept or the oldest was kept FLUSH_S ago (at a
phase-one batch, or the worker's once-a-second timer; recorded by the timer): per call the scoring's fixed cost (tens of
numpy calls) would dominate batches of a few duels."""
STREAKS_KEPT = 200_000
"""Players whose current climb streak this worker remembers (least recently updated dropped)."""

_SCORE_COLUMNS = {name: i for i, name in enumerate(SCORES)}
_F = {name: i for i, name in enumerate(FIELDS)}


@functools.lru_cache(maxsize=64)
def _pair_template(size: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions (a, b) within a round of ``size`` players of the pairs scored (a before b)."""
    picked = np.arange(size) if size <= MAX_PAIR_PLAYERS else \
        np.unique(np.linspace(0, size - 1, MAX_PAIR_PLAYERS).round().astype(np.int64))
    iu, ju = np.triu_indices(picked.shape[0], 1)
    return picked[iu], picked[ju]


def _pairs(offsets: np.ndarray, sizes: np.ndarray, groups: list[tuple[int, np.ndarray]],
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(round, a, b) of the pairs scored for log-loss and calibration: positions into the flat
    participations, a before b in standings order; ``groups``: (size, its rounds)."""
    rounds, firsts, seconds = [], [], []
    for size, rows in groups:
        if size < 2:
            continue
        a, b = _pair_template(size)
        base = offsets[rows][:, None]
        rounds.append(np.repeat(rows, a.shape[0]))
        firsts.append((base + a[None, :]).ravel())
        seconds.append((base + b[None, :]).ravel())
    if not rounds:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    if len(rounds) == 1:
        return rounds[0], firsts[0], seconds[0]
    return np.concatenate(rounds), np.concatenate(firsts), np.concatenate(seconds)


def _medians(values: np.ndarray, offsets: np.ndarray, groups: list[tuple[int, np.ndarray]]) -> np.ndarray:
    """Each round's median of ``values`` (grouped by size: one sort per size)."""
    out = np.zeros(offsets.shape[0] - 1)
    for size, rows in groups:
        if size == 0:
            continue
        ordered = np.sort(values[offsets[rows][:, None] + np.arange(size)[None, :]], axis=1)
        out[rows] = (ordered[:, (size - 1) // 2] + ordered[:, size // 2]) / 2.0
    return out


@dataclass(frozen=True, slots=True)
class _Call:
    """What :meth:`RatingHealth.score` keeps of one engine call: the result's arrays (references,
    nothing copied), the rounds' ids and ranks, not the rounds themselves: objects the garbage
    collector tracks, kept for up to FLUSH_S, would be promoted to its oldest generation and make
    the worker's full collections (over Faust's whole heap) more frequent."""

    ladder: str
    params: engine.Params
    round_ids: list[str]
    ranks: np.ndarray
    seqs: list[int]
    prior_mu: np.ndarray
    prior_sigma: np.ndarray
    prior_rounds: np.ndarray
    rows: np.ndarray
    offsets: np.ndarray
    flat: list[str]
    previous: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray
    performance: np.ndarray
    after_mu: np.ndarray


@dataclass(frozen=True)
class _Prior:
    """The parts of a prior batch scoring reads (``batch.replay.before_rounds``: mu, rounds)."""

    mu: np.ndarray
    sigma: np.ndarray
    rounds: np.ndarray


@dataclass(frozen=True)
class _After:
    mu: np.ndarray


@dataclass(frozen=True)
class _Update:
    """The parts of an engine call's result scoring reads."""

    previous: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray
    performance: np.ndarray
    after: _After


def _combined(calls: list[_Call]) -> tuple[list[str], np.ndarray, list[int], Any, np.ndarray, np.ndarray, list[str],
                                           Any]:
    """A ladder's kept calls as one: (round ids, ranks, seqs, prior, rows, offsets, flat, update), each call's
    rows and participation indices shifted past the previous calls' (``before_rounds`` then reads
    every participation against its own call's prior, as call by call)."""
    if len(calls) == 1:
        c = calls[0]
        return (c.round_ids, c.ranks, c.seqs, _Prior(c.prior_mu, c.prior_sigma, c.prior_rounds), c.rows, c.offsets, c.flat,
                _Update(c.previous, c.mu, c.sigma, c.performance, _After(c.after_mu)))
    row_shift = np.cumsum([0] + [c.prior_mu.shape[0] for c in calls[:-1]])
    part_shift = np.cumsum([0] + [c.rows.shape[0] for c in calls[:-1]])
    offsets = np.concatenate([c.offsets[:-1] + shift for c, shift in zip(calls, part_shift)]
                             + [np.array([part_shift[-1] + calls[-1].rows.shape[0]])])
    previous = np.concatenate([np.where(c.previous >= 0, c.previous + shift, -1) for c, shift in zip(calls, part_shift)])
    prior = _Prior(*(np.concatenate([getattr(c, name) for c in calls]) for name in ("prior_mu", "prior_sigma",
                                                                                   "prior_rounds")))
    mu, sigma, performance = (np.concatenate([getattr(c, name) for c in calls]) for name in ("mu", "sigma", "performance"))
    update = _Update(previous, mu, sigma, performance, _After(np.concatenate([c.after_mu for c in calls])))
    return ([r for c in calls for r in c.round_ids], np.concatenate([c.ranks for c in calls]),
            [q for c in calls for q in c.seqs], prior,
            np.concatenate([c.rows + shift for c, shift in zip(calls, row_shift)]), offsets,
            [p for c in calls for p in c.flat], update)


@dataclass
class RatingHealth:
    """One worker's rating health: rounds scored and not yet recorded, and the climb streaks."""

    window: int
    pending: list[tuple[str, ScoredRounds, list[Climber]]] = field(default_factory=list)
    calls: list[_Call] = field(default_factory=list)
    """Engine calls kept to score (:meth:`score`), in order."""
    _rounds: int = 0
    _since: float = 0.0
    _lock: asyncio.Lock | None = None
    streaks: dict[tuple[str, str], tuple[int, float, bool]] = field(default_factory=dict)
    """(ladder, player) -> (rounds in the streak, mu at its start, flagged already)."""
    _store: HealthStore | None = None
    _models: dict[int, tuple[engine.Params, PerformanceModel]] = field(default_factory=dict)
    cpu_s: float = 0.0
    """CPU seconds of the calling thread spent in :meth:`score` and the scoring of :meth:`flush`
    (``time.thread_time``: the event loop's other work is not counted; exported as
    ``ems_rating_health_cpu_seconds_total``)."""

    @property
    def on(self) -> bool:
        return self.window > 0

    def score(self, ladder: str, params: engine.Params, rounds: Sequence[RoundResult], seqs: Sequence[int],
              prior: engine.PlayerBatch, rows: np.ndarray, offsets: np.ndarray, flat: Sequence[str],
              update: engine.RoundsUpdate) -> None:
        """Keep a ladder's rounds of one engine call to score before their updates (see the module
        docstring): ``prior`` the call's prior batch, ``rows`` each participation's row in it,
        ``offsets`` the rounds' bounds, ``flat`` the participations' players, ``update`` the call's
        result. Nothing is computed here (references kept): :meth:`flush` scores many calls at once."""
        if not self.on or not rounds:
            return
        started = time.thread_time()
        if not self.calls:
            self._since = time.monotonic()
        ranks = np.fromiter((s.rank for r in rounds for s in r.standings), dtype=np.int64, count=len(flat))
        self.calls.append(_Call(ladder, params, [r.round_id for r in rounds], ranks, list(seqs), prior.mu, prior.sigma, prior.rounds, rows,
                                offsets, list(flat), update.previous, update.mu, update.sigma, update.performance,
                                update.after.mu))
        self._rounds += len(rounds)
        self._spent(started)

    def _spent(self, started: float) -> None:
        spent = time.thread_time() - started
        self.cpu_s += spent
        HEALTH_CPU_SECONDS.inc(spent)

    def score_due(self) -> None:
        """Score the kept calls once :meth:`due` (CPU only, no I/O: phase one's batch path, which
        so keeps what it holds bounded and never waits on Redis for rating health); the worker's
        once-a-second timer (:meth:`flush`) records what was scored."""
        if self.calls and self.due():
            started = time.thread_time()
            self._score_kept()
            self._spent(started)

    def due(self) -> bool:
        """Enough kept to score: FLUSH_ROUNDS rounds, or the oldest kept FLUSH_S ago."""
        return bool(self.calls) and (self._rounds >= FLUSH_ROUNDS or time.monotonic() - self._since >= FLUSH_S)

    def _score_kept(self) -> None:
        """Score every kept call, per ladder all its calls at once (into :attr:`pending`)."""
        calls, self.calls, self._rounds = self.calls, [], 0
        by_ladder: dict[str, list[_Call]] = {}
        for call in calls:
            by_ladder.setdefault(call.ladder, []).append(call)
        for ladder, group in by_ladder.items():
            self._score(ladder, group[0].params, *_combined(group))

    def _score(self, ladder: str, params: engine.Params, round_ids: list[str], ranks: np.ndarray, seqs: list[int],
               prior: engine.PlayerBatch, rows: np.ndarray, offsets: np.ndarray, flat: list[str],
               update: engine.RoundsUpdate) -> None:
        """Score rounds (one or more calls combined: :func:`_combined`) into :attr:`pending`."""
        n_rounds = len(round_ids)
        mu, earlier = before_rounds(prior, rows, update)
        prev = update.previous
        sigma = np.where(prev >= 0, update.sigma[np.maximum(prev, 0)], prior.sigma[rows])
        table = np.zeros((n_rounds, len(FIELDS)))
        table[:, _F["scored"]] = 1.0
        scores = score_rounds(mu, ranks, earlier, offsets)
        for subset in ("pair_all", "pair_exp", "rank_all", "rank_exp"):
            value, weight = scores[:, _SCORE_COLUMNS[subset]], scores[:, _SCORE_COLUMNS[subset + "_w"]]
            table[:, _F[subset + "_vw"]] = value * weight  # = batch.metrics.WeightedMean.add
            table[:, _F[subset + "_w"]] = weight
        sizes = np.diff(offsets)
        groups = [(int(size), np.flatnonzero(sizes == size)) for size in np.unique(sizes)]
        round_of = np.repeat(np.arange(n_rounds), sizes)
        table[:, _F["participations"]] = sizes
        table[:, _F["mu_sum"]] = np.bincount(round_of, weights=mu, minlength=n_rounds)
        table[:, _F["provisional"]] = np.bincount(round_of, weights=(earlier < EXPERIENCED_MIN_ROUNDS).astype(float),
                                                  minlength=n_rounds)
        self._pairs(table, mu, sigma, ranks, _pairs(offsets, sizes, groups), self._model(params))
        climbers = self._climbers(ladder, round_ids, seqs, mu, sigma, earlier, update.performance, round_of, flat,
                                  params)
        for c in climbers:
            table[c.round_index, _F["climbers"]] += 1
        # the pool: every player of the call, posterior minus prior (newcomers: prior 0)
        known = prior.rounds > 0
        table[-1, _F["pool_mu_delta"]] = float(update.after.mu.sum() - prior.mu[known].sum())
        table[-1, _F["pool_new"]] = float((~known).sum())
        self.pending.append((ladder, ScoredRounds(np.asarray(seqs, dtype=np.int64), table, _medians(mu, offsets, groups)),
                             climbers))

    def _model(self, params: engine.Params) -> PerformanceModel:
        """The ladder's performance model (for weight-1 rounds), built once per parameters."""
        model = self._models.get(id(params))
        if model is None or model[0] is not params:
            model = self._models[id(params)] = (params, PerformanceModel.from_params(params))
        return model[1]

    @staticmethod
    def _pairs(table: np.ndarray, mu: np.ndarray, sigma: np.ndarray, ranks: np.ndarray,
               pairs: tuple[np.ndarray, np.ndarray, np.ndarray], model: PerformanceModel) -> None:
        """Log-loss and calibration bins of each round's pairs with distinct ranks (into ``table``)."""
        round_of, a, b = pairs
        decided = ranks[a] != ranks[b]
        round_of, a, b = round_of[decided], a[decided], b[decided]
        if round_of.shape[0] == 0:
            return
        n_rounds = table.shape[0]
        p = approx_win_probability(mu[a], sigma[a], mu[b], sigma[b], model)  # P(a ahead of b)
        a_ahead = ranks[a] < ranks[b]
        outcome_p = np.clip(np.where(a_ahead, p, 1.0 - p), 1e-15, 1.0)
        table[:, _F["pairs"]] = np.bincount(round_of, minlength=n_rounds)
        table[:, _F["log_loss"]] = np.bincount(round_of, weights=-np.log(outcome_p), minlength=n_rounds)
        favourite_p = np.maximum(p, 1.0 - p)
        favourite_won = np.where(p >= 0.5, a_ahead, ~a_ahead)
        bins = np.minimum(BINS - 1, ((favourite_p - 0.5) * 2 * BINS).astype(np.int64))
        cell = round_of * BINS + bins
        size = n_rounds * BINS
        first = _F["cal0_pairs"]
        table[:, first:first + BINS] = np.bincount(cell, minlength=size).reshape(n_rounds, BINS)
        first = _F["cal0_wins"]
        table[:, first:first + BINS] = np.bincount(cell, weights=favourite_won.astype(float),
                                                   minlength=size).reshape(n_rounds, BINS)
        first = _F["cal0_expected"]
        table[:, first:first + BINS] = np.bincount(cell, weights=favourite_p, minlength=size).reshape(n_rounds, BINS)

    def _climbers(self, ladder: str, round_ids: Sequence[str], seqs: Sequence[int], mu: np.ndarray,
                  sigma: np.ndarray, earlier: np.ndarray, performance: np.ndarray, round_of: np.ndarray,
                  flat: Sequence[str], params: engine.Params) -> list[Climber]:
        """Update the climb streaks in participation order; the players whose streak qualifies now
        (see the module docstring)."""
        beta = params.beta(1.0)
        z = (performance - mu) / np.sqrt(sigma**2 + beta**2)
        hit = (z >= CLIMB_Z) & (earlier < NEW_ACCOUNT_ROUNDS)
        streaks = self.streaks
        watched = {flat[int(i)] for i in np.flatnonzero(hit)}
        if streaks:
            watched.update(p for p in set(flat) if (ladder, p) in streaks)
        if not watched:
            return []
        out: list[Climber] = []
        for i, player in enumerate(flat):
            if player not in watched:
                continue
            key = (ladder, player)
            if not hit[i]:
                streaks.pop(key, None)
                continue
            count, start, flagged = streaks.pop(key, (0, float(mu[i]), False))
            count += 1
            gain = float(performance[i]) - start
            if not flagged and count >= CLIMB_ROUNDS and gain >= CLIMB_GAIN_BETAS * beta:
                flagged = True
                k = int(round_of[i])
                out.append(Climber(ladder, player, round_ids[k], int(seqs[k]), count, float(z[i]),
                                   float(performance[i]), float(mu[i]), int(earlier[i]), k, gain))
                log.info("rapid climber on ladder %s: %s performed above their rating %d rounds in a row, %.0f above "
                         "where the streak began (%d rounds played)", log_safe(ladder), log_safe(player), count, gain,
                         earlier[i] + 1)
            streaks[key] = (count, start, flagged)
        if len(streaks) > STREAKS_KEPT:  # forget the oldest half (dicts keep insertion order)
            for key in list(streaks)[:len(streaks) // 2]:
                del streaks[key]
        return out

    async def flush(self, client: AsyncRedis, *, force: bool = False) -> None:
        """Score the kept calls once :meth:`due` (or ``force``) and record the scored rounds through
        ``client`` (one script per ladder; see the module docstring). Kept for the next flush if
        Redis fails (the seq check drops repeats)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # one flush at a time: a ladder's entries reach Redis in seq order
            if self.calls and (force or self.due()):
                started = time.thread_time()
                self._score_kept()
                self._spent(started)
            if self.pending:
                await self._record(client)

    async def _record(self, client: AsyncRedis) -> None:
        if self._store is None or self._store.client is not client:
            self._store = HealthStore(client)
        pending, self.pending = self.pending, []
        merged: dict[str, tuple[list[ScoredRounds], list[Climber]]] = {}
        for ladder, scored, climbers in pending:  # one call per ladder, its rounds in seq order, once each
            parts, events = merged.setdefault(ladder, ([], []))
            parts.append(scored)
            events += climbers
        calls = [(ladder, _merge(parts), events) for ladder, (parts, events) in merged.items()]
        try:
            await self._store.record(calls, self.window)
        except BaseException:
            self.pending = pending + self.pending
            raise


def _merge(parts: list[ScoredRounds]) -> ScoredRounds:
    """Several scorings of a ladder's rounds (a batch retried, or batches whose recording failed)
    as one, each seq once, in seq order."""
    if len(parts) == 1:
        return parts[0]
    seqs = np.concatenate([p.seqs for p in parts])
    _, first = np.unique(seqs, return_index=True)
    return ScoredRounds(seqs[first], np.concatenate([p.table for p in parts])[first],
                        np.concatenate([p.medians for p in parts])[first])


def calibration_error(wins: Sequence[float], expected: Sequence[float], pairs: float) -> float:
    """Expected calibration error: sum over bins |wins - predicted wins| / pairs (NaN without pairs)."""
    if pairs <= 0:
        return math.nan
    return float(sum(abs(w - e) for w, e in zip(wins, expected)) / pairs)
