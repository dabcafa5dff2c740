"""Oracle parity of the rating-only models: ``replay_model`` with a model's default parameters
equals elo_mmr_py 2.0.0's system of the same kind (``rate_latest``, mu_noob 1500, sig_noob 350)
on random histories with ties, newcomers, repeat players, contest weights and performance
ceilings: every player's mu within MU_TOLERANCE, sigma within SIGMA_TOLERANCE, the same number
of rounds.

Draws (all-tied rounds): the authors' harness skips every "outcome free" contest, whatever the
system (``simulate_contest``), so the oracle says nothing about them. Each model rates a draw by
its own tie terms (``draws_rate``, default True: Glicko, BAR and elo-multiplayer score the tie 1/2
against every opponent, Codeforces and Topcoder rank every player at the tie's mid rank);
``draws_rate=False`` is the authors' skip, equal to the oracle on histories with draws."""

from __future__ import annotations

import dataclasses
import math

import elo_mmr_py
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.batch.models import replay_model
from stream.contracts import RoundResult, Standing
from stream.engine.models import MODELS
from tests.batch.test_replay_oracle import to_contest

MU_TOLERANCE = 0.01
SIGMA_TOLERANCE = 1e-6
ORACLE_MODELS = [name for name, m in MODELS.items() if m.oracle is not None]


def history(seed: int, pool: int, n_rounds: int, max_field: int, *, weights: bool = True,
            ceilings: bool = True, draws: bool = True) -> list[RoundResult]:
    """Random rounds drawn from a pool of players (so later rounds mix newcomers and repeat
    players), scores on a coarse grid (ties), some weights != 1, some performance ceilings, and
    now and then an all-tied round (``draws``; without, none at all)."""
    rng = np.random.default_rng(seed)
    skill = rng.normal(0.0, 300.0, pool)
    rounds = []
    for t in range(n_rounds):
        k = int(rng.integers(2, min(pool, max_field) + 1))
        who = rng.choice(pool, k, replace=False)
        if rng.random() < 0.05 and draws:
            score = np.zeros(k)
        else:
            score = np.round((skill[who] + rng.normal(0.0, 200.0, k)) / 150.0)
        ranks = 1 + np.array([int(np.sum(score > s)) for s in score])
        if not draws and (ranks == ranks[0]).all():  # no draw at all, not even by the grid's ties
            ranks[-1] += 1
        rounds.append(RoundResult(
            round_id=f"r{t}", occurred_at=float(t * 86_400),
            standings=[Standing(f"p{w}", int(r)) for w, r in zip(who.tolist(), ranks.tolist())],
            weight=float(rng.choice([1.0, 0.5, 2.0])) if weights else 1.0,
            perf_ceiling=float(rng.choice([math.inf, 1700.0])) if ceilings and rng.random() < 0.2 else math.inf,
        ))
    return rounds


def contest(rnd: RoundResult) -> elo_mmr_py.Contest:
    """The round as the authors' contest, performance ceiling included."""
    base = to_contest(rnd)
    ceiling = rnd.perf_ceiling if math.isfinite(rnd.perf_ceiling) else None
    return elo_mmr_py.Contest(base.standings, name=base.name, time_seconds=base.time_seconds,
                              weight=base.weight, perf_ceiling=ceiling)


def deviations(rounds: list[RoundResult], name: str, *, draws_rate: bool = True) -> tuple[float, float]:
    model = MODELS[name]
    params = dataclasses.replace(model.params, draws_rate=draws_rate)
    ours = {p: (mu, sigma, n) for _, p, mu, sigma, n in replay_model(rounds, model, params).ratings()}
    theirs = elo_mmr_py.rate_latest([contest(r) for r in rounds], system=model.oracle,  # type: ignore[arg-type]
                                    mu_noob=1500.0, sig_noob=350.0)
    assert set(ours) == set(theirs)
    assert all(ours[p][2] == r.contests_played for p, r in theirs.items())
    mu_dev = max((abs(ours[p][0] - r.mu) for p, r in theirs.items()), default=0.0)
    sigma_dev = max((abs(ours[p][1] - r.sig) for p, r in theirs.items()), default=0.0)
    return mu_dev, sigma_dev


@pytest.mark.parametrize("name", ORACLE_MODELS)
@pytest.mark.parametrize("seed,pool,n_rounds,max_field", [(1, 30, 40, 12), (2, 400, 12, 300)])
def test_matches_the_authors_system(name: str, seed: int, pool: int, n_rounds: int, max_field: int) -> None:
    """Without draws, the default parameters; with draws, ``draws_rate=False`` (the authors' skip)."""
    rounds = history(seed, pool, n_rounds, max_field, draws=False)
    mu_dev, sigma_dev = deviations(rounds, name)
    print(f"{name}: max |mu - ref| = {mu_dev:.3g}, max |sigma - ref| = {sigma_dev:.3g}")
    assert mu_dev <= MU_TOLERANCE
    assert sigma_dev <= SIGMA_TOLERANCE
    with_draws = history(seed, pool, n_rounds, max_field)
    assert any(r.is_draw() for r in with_draws) or seed == 2
    mu_dev, sigma_dev = deviations(with_draws, name, draws_rate=False)
    assert mu_dev <= MU_TOLERANCE
    assert sigma_dev <= SIGMA_TOLERANCE


@pytest.mark.parametrize("name", ORACLE_MODELS)
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), pool=st.integers(2, 40), n_rounds=st.integers(1, 25))
def test_matches_the_authors_system_on_any_history(name: str, seed: int, pool: int, n_rounds: int) -> None:
    mu_dev, sigma_dev = deviations(history(seed, pool, n_rounds, 40, draws=False), name)
    assert mu_dev <= MU_TOLERANCE
    assert sigma_dev <= SIGMA_TOLERANCE
    mu_dev, sigma_dev = deviations(history(seed, pool, n_rounds, 40), name, draws_rate=False)
    assert mu_dev <= MU_TOLERANCE
    assert sigma_dev <= SIGMA_TOLERANCE


DRAWN = RoundResult(round_id="drawn", occurred_at=float(40 * 86_400),
                    standings=[Standing("p0", 1), Standing("p1", 1), Standing("p2", 1)])


@pytest.mark.parametrize("name", ORACLE_MODELS)
def test_the_oracle_skips_a_draw_and_the_model_rates_it(name: str) -> None:
    """The oracle's answer to an all-tied round is "no contest" (its ratings do not change); the
    model (``draws_rate``) rates it: every player one more round, the ratings drawn together
    (the lowest rated up, the highest down), and without ``draws_rate`` it equals the oracle."""
    rounds = history(4, 12, 30, 8, draws=False)
    rounds = [r for r in rounds if not {"p0", "p1", "p2"} <= set(r.players())] + [DRAWN]
    model = MODELS[name]
    before = {p: r for p, r in elo_mmr_py.rate_latest([contest(r) for r in rounds[:-1]], system=model.oracle,  # type: ignore[arg-type]
                                                      mu_noob=1500.0, sig_noob=350.0).items()}
    after = elo_mmr_py.rate_latest([contest(r) for r in rounds], system=model.oracle,  # type: ignore[arg-type]
                                   mu_noob=1500.0, sig_noob=350.0)
    assert {p: (r.mu, r.sig, r.contests_played) for p, r in after.items()} == \
        {p: (r.mu, r.sig, r.contests_played) for p, r in before.items()}  # the oracle skipped it
    mu_dev, sigma_dev = deviations(rounds, name, draws_rate=False)
    assert mu_dev <= MU_TOLERANCE and sigma_dev <= SIGMA_TOLERANCE
    ours = {p: (mu, n) for _, p, mu, _, n in replay_model(rounds, model).ratings()}
    prior = {p: (mu, n) for _, p, mu, _, n in replay_model(rounds[:-1], model).ratings()}
    drawn = ("p0", "p1", "p2")
    assert all(ours[p][1] == prior.get(p, (0.0, 0))[1] + 1 for p in drawn)
    low = min(drawn, key=lambda p: prior[p][0])
    high = max(drawn, key=lambda p: prior[p][0])
    assert prior[low][0] < prior[high][0]
    assert ours[low][0] > prior[low][0] and ours[high][0] < prior[high][0]


def test_glicko_scores_a_draw_one_half() -> None:
    """A drawn duel by the Glicko formulas the module states (``glicko.rate_round``: the authors'
    multiplayer Glicko, every pair a game; Glickman's S = 1/2 for a draw), computed by hand."""
    from stream.engine.glicko import GlickoParams, rate_round
    from stream.engine.ratings import TANH_MULTIPLIER, Ratings

    params = GlickoParams()
    mu, sigma = np.array([1500.0, 2000.0]), np.array([120.0, 80.0])
    got = rate_round(Ratings(mu, sigma, np.zeros(2, dtype=np.int64)), np.array([1, 1]), params).after
    sig = np.hypot(sigma, params.sig_drift)
    beta = params.beta
    g = 1.0 / np.sqrt(1.0 + sig**2 / beta**2)
    for i, j in ((0, 1), (1, 0)):
        p_ij = 1.0 / (1.0 + math.exp(-TANH_MULTIPLIER * (mu[i] - mu[j]) / math.hypot(sig[j], beta)))
        update = g[j] * (0.5 - p_ij) / 2  # the player against itself scores 1/2, expects 1/2
        q = TANH_MULTIPLIER / beta
        new_sigma = 1.0 / math.sqrt(sig[i] ** -2 + q * q / 4)
        assert abs(got.sigma[i] - new_sigma) <= 1e-9
        assert abs(got.mu[i] - (mu[i] + q * new_sigma**2 * update)) <= 1e-9
    assert got.mu[0] > mu[0] and got.mu[1] < mu[1]


def test_the_oracle_is_the_named_system() -> None:
    """Guard against a silently wrong oracle: the four systems disagree with each other."""
    rounds = history(3, 30, 20, 12)
    finals = {name: {p: mu for _, p, mu, _, _ in replay_model(rounds, MODELS[name]).ratings()} for name in ORACLE_MODELS}
    for a in ORACLE_MODELS:
        for b in ORACLE_MODELS:
            if a < b:
                assert max(abs(finals[a][p] - finals[b][p]) for p in finals[a]) > 1.0
