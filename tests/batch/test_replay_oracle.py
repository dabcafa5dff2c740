"""Agreement with the authors' Rust implementation (elo_mmr_py 2.0.0, built from EbTech/Elo-MMR
f6f83bb) on a small seeded synthetic dataset with ties: every player's final mu within
MU_TOLERANCE and sigma within SIGMA_TOLERANCE, for the exact presets."""

from __future__ import annotations

import elo_mmr_py
import numpy as np
import pytest

from stream.batch import replay, synthetic_rounds
from stream.contracts import RoundResult
from stream.engine import preset

MU_TOLERANCE = 0.01
SIGMA_TOLERANCE = 1e-6
N_PLAYERS, N_ROUNDS, ROUND_SIZE, SEED = 300, 15, 100, 7
TIE_QUANTUM = 40.0
"""Performances rounded to 40 points: about one player in five shares a rank."""


def to_contest(rnd: RoundResult) -> elo_mmr_py.Contest:
    """Our round as the authors' contest: 0-based inclusive [lo, hi] tie ranges."""
    ranks = rnd.ranks()
    order = np.argsort(ranks, kind="stable")
    sorted_ranks = ranks[order]
    lo = np.searchsorted(sorted_ranks, sorted_ranks, side="left")
    hi = np.searchsorted(sorted_ranks, sorted_ranks, side="right") - 1
    players = rnd.players()
    standings = [(players[i], int(a), int(b)) for i, a, b in zip(order.tolist(), lo.tolist(), hi.tolist())]
    return elo_mmr_py.Contest(standings, name=rnd.round_id, time_seconds=int(rnd.occurred_at), weight=rnd.weight)


@pytest.fixture(scope="module")
def rounds() -> list[RoundResult]:
    out = list(synthetic_rounds(N_PLAYERS, N_ROUNDS, ROUND_SIZE, SEED, tie_quantum=TIE_QUANTUM))
    tied = sum(len(r.standings) - len(set(r.ranks().tolist())) for r in out)
    assert tied > 0.1 * N_ROUNDS * ROUND_SIZE, "the dataset must contain ties"
    return out


def deviations(rounds: list[RoundResult], name: str) -> tuple[float, float, int]:
    ours = {p: (mu, sigma, n) for _, p, mu, sigma, n in replay(rounds, preset(name)).ratings()}
    rater = elo_mmr_py.Rater(elo_mmr_py.EloMmrConfig(name))
    rater.extend([to_contest(r) for r in rounds])
    theirs = rater.ratings
    assert set(theirs) == set(ours)
    for p, rating in theirs.items():
        assert rating.contests_played == ours[p][2]
    mu_dev = max(abs(ours[p][0] - r.mu) for p, r in theirs.items())
    sigma_dev = max(abs(ours[p][1] - r.sig) for p, r in theirs.items())
    return mu_dev, sigma_dev, len(theirs)


@pytest.mark.parametrize("name", ["mmr", "mmx"])
def test_exact_presets_match_the_authors_code(rounds: list[RoundResult], name: str) -> None:
    config = elo_mmr_py.EloMmrConfig(name)
    assert config.subsample_size is None, "the reference must run in exact mode"
    mu_dev, sigma_dev, n = deviations(rounds, name)
    print(f"{name}: {n} players, max |mu - ref| = {mu_dev:.3g}, max |sigma - ref| = {sigma_dev:.3g}")
    assert n == len({p for r in rounds for p in r.players()})
    assert mu_dev < MU_TOLERANCE
    assert sigma_dev < SIGMA_TOLERANCE


def test_fast_preset_deviation_is_reported() -> None:
    """mmr-fast subsamples ~100 opponent terms: on rounds of 300 its answer differs from the
    authors' (the subsample windows are built the same way, so the deviation should be tiny)."""
    big = list(synthetic_rounds(N_PLAYERS, 5, N_PLAYERS, SEED, tie_quantum=TIE_QUANTUM))
    mu_dev, sigma_dev, n = deviations(big, "mmr-fast")
    print(f"mmr-fast: {n} players, max |mu - ref| = {mu_dev:.3g}, max |sigma - ref| = {sigma_dev:.3g}")
    assert sigma_dev < SIGMA_TOLERANCE
    assert mu_dev < 50.0
