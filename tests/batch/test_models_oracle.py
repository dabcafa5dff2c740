"""Oracle parity of the rating-only models: ``replay_model`` with a model's default parameters
equals elo_mmr_py 2.0.0's system of the same kind (``rate_latest``, mu_noob 1500, sig_noob 350)
on random histories with ties, newcomers, repeat players, contest weights, performance ceilings
and outcome-free rounds: every player's mu within MU_TOLERANCE, sigma within SIGMA_TOLERANCE,
the same number of rounds."""

from __future__ import annotations

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
            ceilings: bool = True) -> list[RoundResult]:
    """Random rounds drawn from a pool of players (so later rounds mix newcomers and repeat
    players), scores on a coarse grid (ties), some weights != 1, some performance ceilings, and
    now and then an all-tied round."""
    rng = np.random.default_rng(seed)
    skill = rng.normal(0.0, 300.0, pool)
    rounds = []
    for t in range(n_rounds):
        k = int(rng.integers(2, min(pool, max_field) + 1))
        who = rng.choice(pool, k, replace=False)
        if rng.random() < 0.05:
            score = np.zeros(k)
        else:
            score = np.round((skill[who] + rng.normal(0.0, 200.0, k)) / 150.0)
        ranks = 1 + np.array([int(np.sum(score > s)) for s in score])
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


def deviations(rounds: list[RoundResult], name: str) -> tuple[float, float]:
    model = MODELS[name]
    ours = {p: (mu, sigma, n) for _, p, mu, sigma, n in replay_model(rounds, model).ratings()}
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
    rounds = history(seed, pool, n_rounds, max_field)
    assert any(r.is_outcome_free() for r in rounds) or seed == 2
    mu_dev, sigma_dev = deviations(rounds, name)
    print(f"{name}: max |mu - ref| = {mu_dev:.3g}, max |sigma - ref| = {sigma_dev:.3g}")
    assert mu_dev <= MU_TOLERANCE
    assert sigma_dev <= SIGMA_TOLERANCE


@pytest.mark.parametrize("name", ORACLE_MODELS)
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), pool=st.integers(2, 40), n_rounds=st.integers(1, 25))
def test_matches_the_authors_system_on_any_history(name: str, seed: int, pool: int, n_rounds: int) -> None:
    mu_dev, sigma_dev = deviations(history(seed, pool, n_rounds, 40), name)
    assert mu_dev <= MU_TOLERANCE
    assert sigma_dev <= SIGMA_TOLERANCE


def test_the_oracle_is_the_named_system() -> None:
    """Guard against a silently wrong oracle: the four systems disagree with each other."""
    rounds = history(3, 30, 20, 12)
    finals = {name: {p: mu for _, p, mu, _, _ in replay_model(rounds, MODELS[name]).ratings()} for name in ORACLE_MODELS}
    for a in ORACLE_MODELS:
        for b in ORACLE_MODELS:
            if a < b:
                assert max(abs(finals[a][p] - finals[b][p]) for p in finals[a]) > 1.0
