"""Seasons of a ladder and the soft reset at a player's first round of a new season.

A ladder's seasons are a schedule of start times (``season_schedule.Seasons``, the ``seasons`` key
of its ``LADDERS`` entry, with the seasons started since on the running service merged in:
``season_schedule.with_started``). The season of a round is a pure function of its time and the schedule
(``season_schedule.season_of``: how many starts are at or before it; 0 is the time before the
first start), so the stream, ``stream replay``, backfill and a correction's re-rate all see the same season
boundaries in a ladder's history, whatever order or process rates it.

Soft reset (StarCraft II ladder, seed 003: a new season loosens the confidence so that returning
players move quickly): a player whose previous round lies in an earlier season than the round
being rated is reset *before* that round is rated, lazily, at his first round of the new season
(a season start rewrites nobody):

* sigma is raised toward ``sigma_to``: ``sigma'^2 = sigma^2 + share * (sigma_to^2 - sigma^2)``
  (never lowered), by the engine's own pseudo-diffusion (paper Algorithm 2 with
  ``gamma^2 = sigma'^2 - sigma^2``), so the logistic history decays as under skill drift;
* mu is pulled toward the centre (the season's own, e.g. the ladder's mean frozen when it was
  scheduled; else the configured one; else the newcomers' mean) by a factor:
  ``mu' = mu + pull * (centre - mu)``, a translation of
  the whole belief (``mu0`` and every factor's location move with it; Eq. 10's posterior is
  translation invariant, so its mode moves by exactly the same amount).

:func:`reset_rows` is the one implementation; the engine's rating entry points call it on a
round's rows before phase one reads their (mu, sigma) and phase two updates them
(``rounds.rate_flat``, ``teams.rate_rounds_with_teams``, ``round.phase_two``, ``round.rate_round``).
A player who never played (``last_time`` NaN) starts from the newcomer prior: nothing to reset.
"""

from __future__ import annotations

import numpy as np

from .diffusion import diffuse
from .display import UNPLACED, DisplayConfig, next_tier, placement_index
from .params import Params
from .season_schedule import Seasons, entering, season_of
from .state import PlayerBatch


def reset_targets(mu: np.ndarray, sigma: np.ndarray, seasons: Seasons, mu_noob: float,
                  times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The reset (mu, sigma) of players entering a season at ``times`` (module docstring; the
    centre: ``Seasons.centre_of`` the season entered); phase one reads these."""
    centre = seasons.centre_of(season_of(times, seasons), mu_noob)
    new_mu = mu + seasons.mu_pull * (centre - mu) if seasons.mu_pull else mu.copy()
    if seasons.sigma_to is None or seasons.sigma_share == 0.0:
        return new_mu, sigma.copy()
    gap = np.maximum(seasons.sigma_to * seasons.sigma_to - sigma * sigma, 0.0)
    return new_mu, np.sqrt(sigma * sigma + seasons.sigma_share * gap)


def reset_rows(batch: PlayerBatch, rows: np.ndarray, times: np.ndarray, params: Params) -> None:
    """Soft-reset, in place, the rows (distinct) of ``batch`` whose players enter a new season at
    ``times`` (one per row) under ``params.season``; nothing without a schedule. Called once per
    (player, round), before the round reads or updates the player (module docstring)."""
    seasons = params.season
    if seasons is None or not seasons.starts or len(rows) == 0:
        return
    rows = np.asarray(rows, dtype=np.int64)
    times = np.asarray(times, dtype=np.float64)
    mask = entering(batch.last_time[rows], times, seasons)
    moving = rows[mask]
    if len(moving) == 0:
        return
    sub = batch.take(moving)
    mu, sigma = reset_targets(sub.mu, sub.sigma, seasons, params.mu_noob, times[mask])
    raise_ = sigma > sub.sigma
    if raise_.any():
        gamma = np.sqrt(np.maximum(sigma * sigma - sub.sigma * sub.sigma, 0.0))
        widened = diffuse(sub.take(np.flatnonzero(raise_)), gamma[raise_], params)
        widened.sigma = sigma[raise_]  # the target itself (hypot may differ from it by an ulp)
        sub.put(np.flatnonzero(raise_), widened)
    shift = mu - sub.mu
    if seasons.mu_pull:
        sub.mu = mu
        sub.mu0 = sub.mu0 + shift
        if sub.p.shape[1]:
            used = np.arange(sub.p.shape[1])[None, :] < sub.n_factors[:, None]
            sub.p = np.where(used, sub.p + shift[:, None], sub.p)
    batch.put(moving, sub)


def seasoned(batch: PlayerBatch, times: np.ndarray | float, params: Params) -> PlayerBatch:
    """A copy of ``batch`` with :func:`reset_rows` applied to every row (times one per row or one)."""
    out = batch.copy()
    n = len(out)
    reset_rows(out, np.arange(n), np.broadcast_to(np.asarray(times, dtype=np.float64), (n,)), params)
    return out


def season_next_tier(current: np.ndarray, entering_: np.ndarray, mu: np.ndarray, sigma: np.ndarray,
                     cfg: DisplayConfig, seasons: Seasons | None) -> np.ndarray:
    """:func:`~stream.engine.display.next_tier` with a season's placement (seed 003: placement
    games before a league is shown): a player's first ``placement_rounds`` rounds of a season (a
    newcomer's first ones too) show no league but ``"Placement k"`` (``display.placement_index``);
    after the last of them he is placed by the confident rule of promotion, as an unplaced player
    is (the highest step whose threshold ``mu - k*sigma`` reaches). ``current``: the tier indices
    before the round; ``entering_``: which players this round starts a new season for."""
    current = np.asarray(current, dtype=np.int64)
    if seasons is None or seasons.placement_rounds == 0:
        return next_tier(current, mu, sigma, cfg)
    played = np.where(entering_ | (current == UNPLACED), 1,
                      np.where(current < UNPLACED, UNPLACED - current + 1, 0))  # rounds of placement, this one too
    new = next_tier(np.where(played >= 1, UNPLACED, current), mu, sigma, cfg)  # placement ends as unplaced
    placing = (played >= 1) & (played < seasons.placement_rounds)
    return np.where(placing, placement_index(np.maximum(played, 1)), new)


def seasoned_view(mu: np.ndarray, sigma: np.ndarray, last_time: np.ndarray, time: float | np.ndarray,
                  params: Params) -> tuple[np.ndarray, np.ndarray]:
    """The (mu, sigma) a round at ``time`` reads for players whose stored ``mu``, ``sigma`` and
    ``last_time`` are given: :func:`reset_rows`' values for those entering a new season, the
    stored ones otherwise (phase one's single-round path reads no full states)."""
    seasons = params.season
    if seasons is None or not seasons.starts or len(mu) == 0:
        return mu, sigma
    times = np.broadcast_to(np.asarray(time, dtype=np.float64), (len(mu),))
    moving = entering(np.asarray(last_time, dtype=np.float64), times, seasons)
    if not moving.any():
        return mu, sigma
    new_mu, new_sigma = reset_targets(mu[moving], sigma[moving], seasons, params.mu_noob, times[moving])
    mu, sigma = mu.copy(), sigma.copy()
    mu[moving], sigma[moving] = new_mu, new_sigma
    return mu, sigma


def next_round_view(params: object, mu: np.ndarray, sigma: np.ndarray, last_time: np.ndarray,
                    time: float) -> tuple[np.ndarray, np.ndarray]:
    """The (mu, sigma) a round at ``time`` would rate from, for a ladder's parameters of any model:
    :func:`seasoned_view` under Elo-MMR ``Params`` with seasons (a returning player's soft-reset
    belief), the stored values otherwise. What the read side predicts and matches with (``/predict``,
    the matchmaker), so a prediction agrees with the rating the match will do; NaN (unrated) rows
    stay NaN."""
    if not isinstance(params, Params):
        return mu, sigma
    return seasoned_view(np.asarray(mu, dtype=np.float64), np.asarray(sigma, dtype=np.float64),
                         np.asarray(last_time, dtype=np.float64), time, params)
