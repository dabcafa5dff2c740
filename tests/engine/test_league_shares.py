"""League thresholds from target shares (stream.engine.league_shares): the leagues cut from any
distribution hold their shares to within one player per boundary; ties at a boundary go up."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.engine.league_shares import LeagueShares, boundary_ranks, league_of, thresholds_from

SC2 = LeagueShares((0.08, 0.20, 0.24, 0.24, 0.20, 0.04), top=200)


def leagues_of(scores: np.ndarray, spec: LeagueShares) -> np.ndarray:
    ordered = np.sort(scores)
    ranks = boundary_ranks(len(scores), spec)
    at = [ordered[r] if r < len(scores) else np.nan for r in ranks.tolist()]
    return league_of(scores, thresholds_from(at, len(scores), spec))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3000), st.lists(st.integers(1, 50), min_size=1, max_size=7), st.integers(0, 2**31 - 1),
       st.one_of(st.none(), st.integers(1, 300)))
def test_leagues_hold_their_shares_within_one_per_boundary(n: int, weights: list[int], seed: int,
                                                           top: int | None) -> None:
    shares = tuple(w / sum(weights) for w in weights)
    spec = LeagueShares(shares, top)
    scores = np.random.default_rng(seed).permutation(n).astype(float) * 1.5 - 400.0  # distinct
    counts = np.bincount(leagues_of(scores, spec), minlength=spec.leagues)
    assert counts.sum() == n
    if top is not None:
        assert counts[-1] == min(top, n)
    below = np.cumsum(counts)[:len(shares) - 1]  # players below each share boundary
    target = np.minimum(n * np.cumsum(shares)[:len(shares) - 1], n - min(top or 0, n))  # the top taken out
    assert np.all(np.abs(below - target) <= 1.0), (counts, target)


def test_ties_at_a_boundary_go_up() -> None:
    scores = np.array([1.0, 2.0, 2.0, 2.0, 3.0])
    spec = LeagueShares((0.4, 0.6))
    assert leagues_of(scores, spec).tolist() == [0, 1, 1, 1, 1]


def test_bad_shares() -> None:
    with pytest.raises(ValueError, match="sum to 1"):
        LeagueShares((0.5, 0.4))
    with pytest.raises(ValueError, match="top must be"):
        LeagueShares((1.0,), top=0)
    assert SC2.leagues == 7
