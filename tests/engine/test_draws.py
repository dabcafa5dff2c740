"""Draws (every player of a round tied) on the Elo-MMR presets, against the paper's own terms.

The authors' code skips an all-tied contest (``simulate_contest``: "outcome free"), so elo_mmr_py
is an oracle only of that skip: preset ``mmr`` (``draws_rate=False``) keeps it and equals the
oracle on histories with draws. The other presets rate a draw by Theorem 3.2's Q_i: every other
player is a tie term (a win plus a loss, Section 3.1), the player's own one included, so the tie
group's one equation is Q(p) = sum_j d_j(p) and every participant's performance is its zero,
computed here independently (scipy's brentq on the paper's logistic d_j; the Gaussian one in
closed form) and compared with the engine's, for rounds of any size (the direct solver beyond
DIRECT_MAX_PLAYERS included)."""

from __future__ import annotations

import math

import elo_mmr_py
import numpy as np
import pytest
from scipy.optimize import brentq

from stream.batch import replay, synthetic_rounds
from stream.contracts import RoundResult, Standing
from stream.engine import PlayerBatch, preset, rate_round
from stream.engine.performance import DIRECT_MAX_PLAYERS
from stream.engine.state import TANH_MULTIPLIER
from tests.batch.test_replay_oracle import to_contest

DRAWING = ["mmr-bounded", "mmr-fast", "mmx", "mmx-fast", "paper-codeforces"]


def players(mu: np.ndarray, sigma: np.ndarray, name: str) -> PlayerBatch:
    """Players whose belief is N(mu, sigma^2) (a Gaussian factor only), rated once before."""
    batch = PlayerBatch.new(mu.shape[0], preset(name))
    batch.mu[:], batch.mu0[:], batch.sigma[:], batch.w0[:] = mu, mu, sigma, sigma**-2.0
    batch.rounds[:], batch.last_time[:] = 1, 0.0
    return batch


def deltas(sigma: np.ndarray, name: str) -> np.ndarray:
    """delta_j = sqrt(sigma_j'^2 + beta^2), sigma' after a round's drift (no days elapsed)."""
    params = preset(name)
    return np.sqrt(sigma**2 + params.gamma() ** 2 + params.beta() ** 2)


def paper_draw_performance(mu: np.ndarray, sigma: np.ndarray, name: str) -> float:
    """The zero of Q(p) = sum_j d_j(p) over every player (the player's own term included)."""
    delta = deltas(sigma, name)
    if preset(name).variant == "gaussian":  # d_j(p) = -(p - mu_j) / delta_j^2
        return float(np.sum(mu / delta**2) / np.sum(delta**-2.0))
    c = TANH_MULTIPLIER / delta  # logistic: d_j = l_j + v_j, proportional to -c_j tanh((p - mu_j) c_j / 2)

    def q(p: float) -> float:
        return float(np.sum(-c * np.tanh((p - mu) * c / 2.0)))

    return float(brentq(q, -6000.0, 9000.0, xtol=1e-12, rtol=1e-15))


# a subsampled preset's Q holds the ~100 opponent terms nearest the player (the authors' window):
# one equation for everyone only in rounds within the window
SIZES = [(name, n) for name in DRAWING for n in (2, 3, 9, DIRECT_MAX_PLAYERS + 30)
         if preset(name).subsample_size is None or n <= preset(name).subsample_size]


@pytest.mark.parametrize(("name", "n"), SIZES)
def test_a_draw_performs_at_the_zero_of_the_papers_tie_terms(name: str, n: int) -> None:
    rng = np.random.default_rng(n)
    mu, sigma = rng.uniform(1200.0, 2200.0, n), rng.uniform(60.0, 350.0, n)
    if "fast" in name or name == "paper-codeforces":
        mu = np.round(mu / 2.0) * 2.0 + 1.0  # bucket centres: the subsample's merged terms are exact
    update = rate_round(players(mu, sigma, name), np.ones(n, dtype=np.int64), preset(name), time=0.0)
    want = paper_draw_performance(mu, sigma, name)
    assert np.ptp(update.performance) == 0.0
    assert abs(update.performance[0] - want) <= 1e-6
    assert (update.after.rounds == 2).all()
    # ratings drawn together: the lowest rated rises, the highest falls
    assert update.after.mu[np.argmin(mu)] > mu.min() and update.after.mu[np.argmax(mu)] < mu.max()


@pytest.mark.parametrize("name", DRAWING)
def test_a_drawn_duel_between_1500_and_2000(name: str) -> None:
    """Equal uncertainties: both performed at 1750, the balance point of the two tie terms (the
    weaker player performed above his rating, the stronger below); the weaker rises, the stronger
    falls, symmetrically, and they do not cross."""
    mu, sigma = np.array([1500.0, 2000.0]), np.array([80.0, 80.0])
    update = rate_round(players(mu, sigma, name), np.array([1, 1]), preset(name), time=0.0)
    assert np.allclose(update.performance, 1750.0, rtol=0, atol=1e-9)
    after = update.after.mu
    assert 1500.0 < after[0] < after[1] < 2000.0
    assert abs((after[0] - 1500.0) - (2000.0 - after[1])) <= 1e-9


def test_mmx_draw_is_the_gaussian_update_of_the_papers_performance() -> None:
    """Elo-MMchi end to end in closed form: p the precision-weighted mean of the mus (weights
    delta_j^-2), then each player's N(mu, sigma'^2) times N(p, beta^2)."""
    params = preset("mmx")
    mu, sigma = np.array([1400.0, 1650.0, 2100.0]), np.array([300.0, 90.0, 150.0])
    update = rate_round(players(mu, sigma, "mmx"), np.array([2, 2, 2]), params, time=0.0)
    p = paper_draw_performance(mu, sigma, "mmx")
    drifted = sigma**2 + params.gamma() ** 2
    want_mu = (mu / drifted + p / params.beta() ** 2) / (1 / drifted + 1 / params.beta() ** 2)
    want_sigma = (1 / drifted + 1 / params.beta() ** 2) ** -0.5
    np.testing.assert_allclose(update.after.mu, want_mu, rtol=0, atol=1e-9)
    np.testing.assert_allclose(update.after.sigma, want_sigma, rtol=0, atol=1e-9)


def history_with_draws(seed: int) -> list[RoundResult]:
    rounds = list(synthetic_rounds(60, 40, 8, seed, tie_quantum=40.0))
    rng = np.random.default_rng(seed)
    for k in rng.choice(len(rounds), 8, replace=False).tolist():
        rounds[k].standings = [Standing(s.player, 1) for s in rounds[k].standings]
    assert sum(r.is_draw() for r in rounds) >= 8
    return rounds


@pytest.mark.parametrize("seed", [1, 2])
def test_mmr_keeps_the_authors_skip_and_equals_the_oracle_with_draws(seed: int) -> None:
    rounds = history_with_draws(seed)
    result = replay(rounds, preset("mmr"))
    assert sorted(result.skipped) == sorted((r.ladder, r.round_id) for r in rounds if r.is_draw())
    theirs = elo_mmr_py.rate_latest([to_contest(r) for r in rounds], system=elo_mmr_py.EloMmrConfig("mmr"))
    ours = {p: (mu, sigma, n) for _, p, mu, sigma, n in result.ratings()}
    assert set(ours) == set(theirs)
    for p, r in theirs.items():
        assert abs(ours[p][0] - r.mu) < 0.01 and abs(ours[p][1] - r.sig) < 1e-6 and ours[p][2] == r.contests_played


@pytest.mark.parametrize("name", ["mmx", "mmr-bounded"])
def test_the_oracle_skips_draws_the_presets_rate(name: str) -> None:
    """elo_mmr_py's ratings with and without the draws are the same (it skips them); ours are
    not (the draws are rated), and without the draws our presets equal the oracle where they are
    its configs (tests/batch/test_replay_oracle.py: mmr, mmx, mmr-fast)."""
    rounds = history_with_draws(3)
    config = elo_mmr_py.EloMmrConfig("mmx" if name == "mmx" else "mmr")
    plain = [r for r in rounds if not r.is_draw()]
    with_draws = elo_mmr_py.rate_latest([to_contest(r) for r in rounds], system=config)
    without = elo_mmr_py.rate_latest([to_contest(r) for r in plain], system=config)
    assert {p: (r.mu, r.sig) for p, r in with_draws.items() if p in without} == \
        {p: (r.mu, r.sig) for p, r in without.items()}
    ours = replay(rounds, preset(name))
    assert ours.skipped == []
    skipping = replay(rounds, preset(name).with_(draws_rate=False))
    assert sorted(skipping.skipped) == sorted((r.ladder, r.round_id) for r in rounds if r.is_draw())
    moved = [abs(a[2] - b[2]) for a, b in zip(sorted(ours.ratings()), sorted(skipping.ratings()))]
    assert max(moved) > 1.0
    assert math.isfinite(max(moved))
