"""rate_rounds (many rounds per call, in waves) equals rating the rounds one by one with rate_round."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stream.engine import OutcomeFree, PlayerBatch, RoundSpec, preset, rate_round, rate_rounds, warm_up
from stream.engine.performance import DIRECT_MAX_PLAYERS, solve_segments
from stream.engine import kernels as kernels_module
from stream.engine.rounds import _waves, rate_flat
from stream.engine.season_schedule import Seasons
from stream.engine.state import pack_batch, unpack_batch

DAY = 86_400.0
TOL = 1e-9
PARAMS = {  # every preset but mmr rates draws (all-tied rounds): the sequences hold some
    "mmr": preset("mmr"),
    "mmr-draws": preset("mmr").with_(draws_rate=True),
    "mmr-drift-split": preset("mmr").with_(drift_per_day=40.0, split_ties=True, draws_rate=True),
    "mmr-bounded": preset("mmr-bounded").with_(history_limit=3),
    "mmr-rho-half": preset("mmr").with_(rho=0.5, history_limit=5, drift_per_day=10.0, draws_rate=True),
    "mmx": preset("mmx"),
    "mmr-fast": preset("mmr-fast"),
    "mmx-fast": preset("mmx-fast"),
    "paper-codeforces": preset("paper-codeforces"),
}


@st.composite
def sequences(draw: st.DrawFn) -> tuple[int, list[RoundSpec]]:
    """A pool of players (some rated before the call) and a sequence of rounds over it."""
    n_players = draw(st.integers(2, 30))
    n_rounds = draw(st.integers(1, 25))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rounds = []
    t = 0.0
    for _ in range(n_rounds):
        size = int(rng.integers(1, n_players + 1))
        who = rng.choice(n_players, size, replace=False)
        ranks = rng.integers(0, draw(st.integers(1, 6)), size)  # ties, sometimes all tied
        t += float(rng.choice([0.0, 0.3, 2.0, 30.0])) * DAY
        rounds.append(RoundSpec(who, ranks, time=t, weight=float(rng.choice([1.0, 0.5, 1.7])),
                                perf_ceiling=float(rng.choice([math.inf, 1500.0, 1650.0]))))
    return n_players, rounds


def one_by_one(prior: PlayerBatch, rounds: list[RoundSpec], params):
    """The reference: rate_round per round; per round (performance, mu, sigma) or None (skipped)."""
    batch = prior.copy()
    out = []
    for r in rounds:
        try:
            update = rate_round(batch.take(r.players), r.ranks, params, weight=r.weight,
                                perf_ceiling=r.perf_ceiling, time=r.time)
        except OutcomeFree:
            out.append(None)
            continue
        batch.put(r.players, update.after)
        out.append((update.performance, update.after.mu, update.after.sigma))
    return batch, out


def warm_prior(n: int, params, rng: np.random.Generator) -> PlayerBatch:
    """n players, about half of them rated in earlier rounds (histories of different lengths),
    the others newcomers."""
    batch = PlayerBatch.new(n, params)
    for t in range(int(rng.integers(0, 4))):
        who = rng.choice(n, max(2, n // 2), replace=False)
        if len(np.unique(ranks := rng.integers(0, 5, who.shape[0]))) > 1:
            batch.put(who, rate_round(batch.take(who), ranks, params, time=-(10 - t) * DAY).after)
    return batch


def assert_equal_to_one_by_one(prior: PlayerBatch, rounds: list[RoundSpec], params) -> None:
    expected_batch, expected = one_by_one(prior, rounds, params)
    got = rate_rounds(prior, rounds, params)
    assert got.rated.tolist() == [e is not None for e in expected]
    for k, e in enumerate(expected):
        part = slice(int(got.offsets[k]), int(got.offsets[k + 1]))
        if e is None:
            assert np.isnan(got.mu[part]).all()
            continue
        for ours, theirs in zip((got.performance[part], got.mu[part], got.sigma[part]), e):
            np.testing.assert_allclose(ours, theirs, rtol=0, atol=TOL)
    for name in ("mu", "sigma", "mu0", "n_factors", "rounds", "last_time"):
        np.testing.assert_allclose(getattr(got.after, name), getattr(expected_batch, name), rtol=0, atol=TOL)
    np.testing.assert_allclose(got.after.w0, expected_batch.w0, rtol=1e-12, atol=0)
    h = min(got.after.p.shape[1], expected_batch.p.shape[1])
    for name in ("p", "w_arg", "w_out"):
        np.testing.assert_allclose(getattr(got.after, name)[:, :h], getattr(expected_batch, name)[:, :h],
                                   rtol=1e-12, atol=TOL)


@pytest.mark.parametrize("name", sorted(PARAMS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=sequences(), seed=st.integers(0, 2**32 - 1))
def test_rate_rounds_equals_rating_one_by_one(name, case, seed):
    n_players, rounds = case
    params = PARAMS[name]
    prior = warm_prior(n_players, params, np.random.default_rng(seed))
    assert_equal_to_one_by_one(prior, rounds, params)


def large_round_field(params, rng: np.random.Generator) -> tuple[PlayerBatch, np.ndarray, np.ndarray]:
    """A warm prior of DIRECT_MAX_PLAYERS + 120 players, the rows of a round above the segmented
    solver's size (``big``, 40 over it) and the rows of the others (``rest``)."""
    n = DIRECT_MAX_PLAYERS + 120
    prior = warm_prior(n, params, rng)
    big = rng.choice(n, DIRECT_MAX_PLAYERS + 40, replace=False)
    return prior, big, np.setdiff1d(np.arange(n), big)


@pytest.mark.parametrize("name", ["mmr", "mmx", "paper-codeforces", "mmr-bounded"])
def test_large_rounds_beside_small_ones_in_a_wave(name):
    """A round above the segmented solver's size takes the single-round path inside its wave."""
    params = PARAMS[name]
    rng = np.random.default_rng(5)
    prior, big, rest = large_round_field(params, rng)
    n = prior.mu.shape[0]
    rounds = [RoundSpec(big, rng.integers(0, 50, big.shape[0]), time=DAY)]
    rounds += [RoundSpec(rest[i:i + 4], rng.integers(0, 3, 4), time=DAY) for i in range(0, 76, 4)]
    rounds += [RoundSpec(big[:3], np.array([1, 2, 3]), time=2 * DAY)]
    assert _waves(np.concatenate([r.players for r in rounds]),
                  np.cumsum([0, *(r.players.shape[0] for r in rounds)]),
                  np.ones(len(rounds), bool), n).tolist() == [0] * 20 + [1]
    assert_equal_to_one_by_one(prior, rounds, params)


def test_waves_follow_the_last_wave_of_any_player():
    rows = np.array([0, 1, 2, 3, 1, 2, 4, 5, 5, 0])
    offsets = np.array([0, 2, 4, 6, 8, 10])
    # rounds: {0,1} {2,3} {1,2} {4,5} {5,0}
    assert _waves(rows, offsets, np.ones(5, bool), 6).tolist() == [0, 0, 1, 0, 1]
    # a skipped round holds nobody back
    assert _waves(rows, offsets, np.array([True, False, True, True, True]), 6).tolist() == [0, -1, 1, 0, 1]


def test_previous_links_each_player_to_his_last_round_in_the_call():
    params = preset("mmr")
    rounds = [RoundSpec(np.array([0, 1]), np.array([1, 2]), time=0.0),
              RoundSpec(np.array([2, 2 - 2]), np.array([1, 1]), time=0.0),  # all tied: skipped
              RoundSpec(np.array([1, 2]), np.array([2, 1]), time=DAY)]
    got = rate_rounds(PlayerBatch.new(3, params), rounds, params)
    assert got.rated.tolist() == [True, False, True]
    assert got.previous.tolist() == [-1, -1, -1, -1, 1, -1]


def random_prior(n: int, rng: np.random.Generator, longest: int) -> PlayerBatch:
    """n players with random states: newcomers (never played, no factors) beside players with
    histories of up to ``longest`` factors (the padded arrays wider still)."""
    batch = PlayerBatch.new(n, preset("mmr"))
    new = rng.random(n) < 0.3
    k = np.where(new, 0, rng.integers(0, longest + 1, n))
    width = int(k.max(initial=0)) + int(rng.integers(0, 3))
    used = np.arange(width)[None, :] < k[:, None]
    batch.p = np.where(used, rng.normal(1500, 400, (n, width)), 0.0)
    batch.w_arg = np.where(used, rng.uniform(0.001, 0.01, (n, width)), 0.0)
    batch.w_out = np.where(used, 2 * batch.w_arg * rng.uniform(0.2, 1.0, (n, width)), 0.0)
    batch.n_factors = k.astype(np.int64)
    batch.mu = np.where(new, batch.mu, rng.normal(1500, 350, n))
    batch.mu0 = np.where(new, batch.mu0, batch.mu + rng.normal(0, 50, n))
    batch.sigma = np.where(new, batch.sigma, rng.uniform(60, 300, n))
    batch.w0 = np.where(new, batch.w0, rng.uniform(1e-6, 1e-4, n))
    batch.rounds = np.where(new, 0, k + rng.integers(0, 5, n)).astype(np.int64)
    batch.last_time = np.where(new, np.nan, -rng.uniform(0, 90, n) * DAY)
    return batch


@st.composite
def flat_batches(draw: st.DrawFn) -> tuple[PlayerBatch, tuple[np.ndarray, ...], object]:
    """A prior and a batch of small rounds as ``rate_flat`` takes them: repeated players, ties
    (some rounds all tied or of one player: not rated), newcomers, long histories, rounds of
    several weights, times and ceilings, exact logistic parameters of every history bound and rho."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(2, 60))
    prior = random_prior(n, rng, draw(st.sampled_from([0, 3, 35])))
    n_rounds = draw(st.integers(1, 40))
    sizes = rng.integers(1, min(n, draw(st.sampled_from([2, 3, 10, 30]))) + 1, n_rounds)
    rows = np.concatenate([rng.choice(n, s, replace=False) for s in sizes]).astype(np.int64)
    ranks = rng.integers(0, draw(st.integers(1, 6)), rows.shape[0])
    if draw(st.booleans()):
        ranks = ranks.astype(float) * 0.5
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    times = np.cumsum(rng.choice([0.0, 60.0, 0.5 * DAY, 3 * DAY], n_rounds))
    weights = rng.choice([1.0, 1.0, 0.5, 1.7], n_rounds)
    ceilings = rng.choice([math.inf, math.inf, 1500.0, 1700.0], n_rounds)
    params = preset("mmr").with_(history_limit=draw(st.sampled_from([None, 1, 3, 30])),
                                 rho=draw(st.sampled_from([0.0, 0.5, 1.0, 2.0, 0.3])),
                                 drift_per_day=draw(st.sampled_from([0.0, 40.0])), split_ties=draw(st.booleans()),
                                 draws_rate=draw(st.booleans()))
    return prior, (rows, ranks, offsets, times, weights, ceilings), params


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=flat_batches())
def test_rate_flat_equals_rating_one_by_one_and_leaves_the_prior(case):
    """rate_flat (the arrays phase one and the re-rate pass) equals rate_round one round after the
    other, and leaves the prior as it was (its factor arrays may be read-only views)."""
    prior, (rows, ranks, offsets, times, weights, ceilings), params = case
    before = prior.copy()
    for name in ("p", "w_arg", "w_out"):
        getattr(prior, name).setflags(write=False)  # as unpack_batch's views may be
    rounds = [RoundSpec(rows[a:b], ranks[a:b], time=float(t), weight=float(w), perf_ceiling=float(c))
              for a, b, t, w, c in zip(offsets[:-1], offsets[1:], times, weights, ceilings)]
    assert_equal_to_one_by_one(prior, rounds, params)
    got = rate_flat(prior, rows, ranks, offsets, times, weights, ceilings, params)
    np.testing.assert_array_equal(got.offsets, offsets)
    for name in PlayerBatch.__slots__:
        np.testing.assert_array_equal(getattr(prior, name), getattr(before, name), err_msg=name)


def test_warm_up_compiles_what_phase_one_calls():
    """After ``warm_up`` phase one's first batch compiles nothing: priors unpacked from the store
    (newcomers' factor arrays are read-only views), int64 ranks."""
    warm_up()
    kernels = [f for f in vars(kernels_module).values() if hasattr(f, "signatures")]
    compiled = [len(f.signatures) for f in kernels]
    params = preset("mmr-bounded")
    for states in ([None] * 4, pack_batch(warm_prior(4, params, np.random.default_rng(3)))):
        prior = unpack_batch(states, params)
        got = rate_flat(prior, np.array([0, 1, 2, 3]), np.array([1, 2, 1, 2]), np.array([0, 2, 4]),
                        np.array([0.0, DAY]), np.ones(2), np.full(2, math.inf), params)
        assert got.rated.all()
    assert [len(f.signatures) for f in kernels] == compiled


@pytest.mark.parametrize("name", ["mmr-bounded", "mmx", "mmr-fast", "paper-codeforces"])
def test_a_large_draw_beside_small_rounds_is_rated_as_one_by_one(name):
    """An all-tied round above the segmented solver's size (one tie group: the direct solve),
    beside small draws in its wave, on the presets that rate draws."""
    params = PARAMS[name]
    prior, big, rest = large_round_field(params, np.random.default_rng(7))
    rounds = [RoundSpec(big, np.ones(big.shape[0], dtype=np.int64), time=DAY)]
    rounds += [RoundSpec(rest[i:i + 2], np.array([1, 1]), time=DAY) for i in range(0, 40, 2)]
    got = rate_rounds(prior, rounds, params)
    assert got.rated.all()
    perf = got.performance[:big.shape[0]]
    assert prior.mu[big].min() < perf.min() <= perf.max() < prior.mu[big].max()
    if params.subsample_size is None:  # one tie group, one equation (a subsampled Q holds ~100 near terms)
        assert np.ptp(perf) == 0.0
    assert_equal_to_one_by_one(prior, rounds, params)


SEASONS = Seasons(starts=(3 * DAY, 9 * DAY), names=("S1", "S2"), sigma_to=250.0, sigma_share=0.5, mu_pull=0.25,
                  centre=1400.0)


@pytest.mark.parametrize("name", ["mmr", "mmx", "mmr-fast", "paper-codeforces"])
def test_rate_rounds_equals_one_by_one_bit_for_bit_across_seasons(name):
    """The stream rates a ladder's rounds in waves (``rate_rounds``), the backfill one by one
    (``rate_round``): the same floats to the last bit, soft resets and histories of 8 factors and
    more included (a numpy sum over a row padded to its batch's width depends on the width)."""
    params = PARAMS[name].with_(season=SEASONS)
    for seed in range(40):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(4, 40))
        prior = warm_prior(n, params, rng)
        rounds, t = [], 0.0
        for _ in range(int(rng.integers(5, 30))):
            size = int(rng.integers(2, min(n, 14) + 1))
            t += float(rng.choice([0.0, 0.3, 2.0])) * DAY
            rounds.append(RoundSpec(rng.choice(n, size, replace=False), rng.integers(0, 6, size), time=t,
                                    weight=float(rng.choice([1.0, 0.5])),
                                    perf_ceiling=float(rng.choice([math.inf, 1650.0]))))
        expected_batch, expected = one_by_one(prior, rounds, params)
        got = rate_rounds(prior, rounds, params)
        for k, e in enumerate(expected):
            part = slice(int(got.offsets[k]), int(got.offsets[k + 1]))
            if e is not None:
                for ours, theirs in zip((got.performance[part], got.mu[part], got.sigma[part]), e):
                    np.testing.assert_array_equal(ours, theirs, err_msg=f"seed {seed}, round {k}")
        for field in ("mu", "sigma", "mu0", "w0"):
            np.testing.assert_array_equal(getattr(got.after, field), getattr(expected_batch, field),
                                          err_msg=f"seed {seed}")


@pytest.mark.parametrize("name", ["mmr", "mmx"])
def test_segments_of_several_sizes_are_each_round_alone_bit_for_bit(name):
    """``solve_segments`` of a wave's rounds of several sizes gives each round the floats it has
    alone (phase one of one round), whatever the other rounds' sizes."""
    params = PARAMS[name]
    rng = np.random.default_rng(11)
    sizes = rng.integers(2, 20, 60)
    bounds = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    mu, delta = rng.normal(1500, 300, bounds[-1]), rng.uniform(100, 400, bounds[-1])
    ranks = np.concatenate([rng.integers(0, s, s) if s > 2 else np.arange(s) for s in sizes]).astype(float)
    together = solve_segments(mu, delta, ranks, bounds, params)
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        alone = solve_segments(mu[a:b], delta[a:b], ranks[a:b], np.array([0, b - a]), params)
        np.testing.assert_array_equal(together[a:b], alone)
