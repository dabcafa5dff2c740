"""Agreement with the authors' Rust implementation (PyPI elo-mmr-py 2.0.0) on a seeded,
multi-round dataset with overlapping players and ties, in exact mode (no subsampling)."""

import elo_mmr_py as em
import numpy as np
import pytest

from stream.engine import PlayerBatch, PlayerState, preset, rate_round

DAY = 86_400


def dataset(seed: int, n_players: int, n_rounds: int, max_field: int):
    """Rounds as (player indices best first, 0-based lo, hi); all-tied rounds dropped."""
    rng = np.random.default_rng(seed)
    rounds = []
    for _ in range(n_rounds):
        k = int(rng.integers(2, max_field + 1))
        who = rng.choice(n_players, k, replace=False)
        score = rng.integers(0, max(2, k // 2), k)
        order = np.argsort(-score, kind="stable")
        who, score = who[order], score[order]
        lo = np.array([np.sum(score > s) for s in score])
        hi = np.array([np.sum(score >= s) - 1 for s in score])
        if hi[0] + 1 >= k:
            continue
        rounds.append((who, lo, hi))
    return rounds


def replay(rounds, name):
    params = preset(name)
    states: dict[int, PlayerState] = {}
    for t, (who, lo, _) in enumerate(rounds):
        batch = PlayerBatch.from_states([states.get(int(w), PlayerState.new(params)) for w in who])
        after = rate_round(batch, lo + 1, params, time=float(t * 2 * DAY)).after
        states.update(zip((int(w) for w in who), after.to_states()))
    return states


@pytest.mark.parametrize("name", ["mmr", "mmx"])
@pytest.mark.parametrize(
    "seed,n_players,n_rounds,max_field",
    [(11, 40, 30, 12), (12, 600, 4, 500)],  # the second exercises the Chebyshev phase one
)
def test_matches_reference_exact(name, seed, n_players, n_rounds, max_field):
    rounds = dataset(seed, n_players, n_rounds, max_field)
    contests = [
        em.Contest([(f"p{w}", int(a), int(b)) for w, a, b in zip(who, lo, hi)], time_seconds=t * 2 * DAY)
        for t, (who, lo, hi) in enumerate(rounds)
    ]
    config = em.EloMmrConfig(name)
    assert config.subsample_size is None  # the oracle runs exact
    reference = em.rate_latest(contests, system=config)
    ours = replay(rounds, name)
    assert set(reference) == {f"p{w}" for w in ours}
    for w, state in ours.items():
        ref = reference[f"p{w}"]
        assert abs(state.mu - ref.mu) < 0.01
        assert abs(state.sigma - ref.sig) < 1e-6
        assert state.rounds == ref.contests_played


@pytest.mark.parametrize("name", ["mmr-fast", "mmx-fast"])
def test_matches_reference_subsampled(name):
    """The -fast presets: bucketed/merged opponent terms and windows, as the reference."""
    rounds = dataset(21, 300, 6, 250)
    contests = [
        em.Contest([(f"p{w}", int(a), int(b)) for w, a, b in zip(who, lo, hi)], time_seconds=t * 2 * DAY)
        for t, (who, lo, hi) in enumerate(rounds)
    ]
    reference = em.rate_latest(contests, system=em.EloMmrConfig(name))
    ours = replay(rounds, name)
    for w, state in ours.items():
        ref = reference[f"p{w}"]
        assert abs(state.mu - ref.mu) < 0.01
        assert abs(state.sigma - ref.sig) < 1e-6
