"""The paper's properties (Sections 4-5) as hypothesis property tests."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.engine import PlayerBatch, PlayerState, Params, phase_one, preset, rate_round
from stream.engine.diffusion import diffuse, gammas
from stream.engine.state import factor_weight
from stream.engine.update import robust_average, update_beliefs
from tests.engine.oracles import fold_oldest

DAY = 86_400.0
SETTINGS = settings(max_examples=25, deadline=None)

mus = st.floats(800, 2200)
sigmas = st.floats(60, 350)
variants = st.sampled_from(
    [preset("mmr"), preset("mmx"), Params(rho=math.inf), preset("paper-codeforces").with_(subsample_size=None)]
)


def total_weight(b: PlayerBatch) -> np.ndarray:
    return b.w0 + factor_weight(b.w_arg, b.w_out).sum(axis=1)


def experienced(params: Params, seed: int, n: int = 6, rounds: int = 4) -> PlayerBatch:
    """n players after a few random rounds (non-trivial factor histories)."""
    rng = np.random.default_rng(seed)
    b = PlayerBatch.new(n, params)
    for t in range(rounds):
        b = rate_round(b, rng.permutation(n) + 1, params, time=t * DAY).after
    return b


@SETTINGS
@given(variants, st.lists(st.tuples(mus, sigmas, st.integers(1, 6)), min_size=2, max_size=12), st.booleans())
def test_better_rank_never_lower_performance(params, players, split):
    """Theorem 5.2."""
    mu, sig, ranks = (np.array(c) for c in zip(*players))
    if len(set(ranks.tolist())) < 2:
        return
    perf = phase_one(mu, sig, np.zeros(len(mu)), ranks, params.with_(split_ties=split))
    order = np.argsort(ranks, kind="stable")
    assert np.all(np.diff(perf[order]) <= 1e-9)


@SETTINGS
@given(
    variants,
    st.lists(st.lists(st.tuples(mus, sigmas), min_size=2, max_size=6), min_size=2, max_size=4),
    st.data(),
)
def test_better_past_rank_never_lower_rating(params, fields, data):
    """Theorem 5.5: opponents' ratings held fixed, improving player i's rank in any one past
    round never lowers i's current rating."""
    ranks = [data.draw(st.integers(2, len(f) + 1)) for f in fields]
    k = data.draw(st.integers(0, len(fields) - 1))

    def final_mu(rank_changes: list[int]) -> float:
        me = PlayerState.new(params)
        for t, (field, rank) in enumerate(zip(fields, rank_changes)):
            others = [PlayerState(mu=m, sigma=s, mu0=m, w0=s**-2) for m, s in field]
            batch = PlayerBatch.from_states([me, *others])
            # opponents keep their order 1..n, i is inserted at `rank` (ties allowed below it)
            opp_ranks = np.arange(1, len(others) + 1) * 2
            my_rank = 2 * rank - 3  # between opponents rank-2 and rank-1
            me = rate_round(
                batch, np.concatenate(([my_rank], opp_ranks)), params, time=t * DAY
            ).after.to_states()[0]
        return me.mu

    base = final_mu(ranks)
    better = list(ranks)
    better[k] = ranks[k] - 1
    assert final_mu(better) >= base - 1e-7


@SETTINGS
@given(
    st.sampled_from([preset("mmx"), Params(rho=math.inf)]),
    mus, st.floats(0, 400), sigmas,
    st.lists(st.tuples(mus, sigmas), min_size=1, max_size=6),
    st.booleans(),
)
def test_memoryless_monotonicity(params, mu_j, gap, sig, others, i_wins):
    """Theorem 5.6: mu_i >= mu_j, equal sigma -> equal new sigma; i better -> mu_i' > mu_j';
    j better -> j gains more than i."""
    mu_i = mu_j + gap
    states = [PlayerState(mu=mu_i, sigma=sig, mu0=mu_i, w0=sig**-2),
              PlayerState(mu=mu_j, sigma=sig, mu0=mu_j, w0=sig**-2)]
    states += [PlayerState(mu=m, sigma=s, mu0=m, w0=s**-2) for m, s in others]
    n = len(states)
    ranks = np.arange(1, n + 1)
    if not i_wins:
        ranks[[0, 1]] = ranks[[1, 0]]
    after = rate_round(PlayerBatch.from_states(states), ranks, params, time=0.0).after
    assert after.sigma[0] == after.sigma[1]
    if i_wins:
        assert after.mu[0] > after.mu[1]
    else:
        assert after.mu[1] - mu_j > after.mu[0] - mu_i


@SETTINGS
@given(st.integers(0, 10_000), st.sampled_from([0.04, 0.5, 1.0, 3.0]), st.floats(0.2, 3.0))
def test_robustness_bound(seed, rho, weight):
    """Theorem 5.7: the extreme rating moves Delta_+ and Delta_- lie between
    (pi/(beta sqrt 3)) / (w0 + pi^2/6 sum w_k) and (pi/(beta sqrt 3)) / w0."""
    params = preset("mmr").with_(rho=rho)
    prior = experienced(params, seed)
    diffused = diffuse(prior, gammas(params, weight, np.zeros(len(prior))), params)
    beta = params.beta(weight)
    w_hist = factor_weight(diffused.w_arg, diffused.w_out).sum(axis=1)
    scale = math.pi / (beta * math.sqrt(3))
    lower = scale / (diffused.w0 + math.pi**2 / 6 * w_hist)
    upper = scale / diffused.w0
    extreme = 1e12
    up = update_beliefs(diffused, np.full(len(prior), extreme), beta, params).mu - diffused.mu
    down = diffused.mu - update_beliefs(diffused, np.full(len(prior), -extreme), beta, params).mu
    for delta in (up, down):
        assert np.all(delta >= lower * (1 - 1e-9)) and np.all(delta <= upper * (1 + 1e-9))


@SETTINGS
@given(st.integers(0, 10_000), st.sampled_from([0.0, 0.04, 1.0, 5.0, math.inf]), st.floats(0.01, 2000))
def test_pseudodiffusion_preserves_rating_and_adds_gamma_squared(seed, rho, days):
    """Section 4.1 / Algorithm 2: mu unchanged (also as the zero of L'), sigma^2 += gamma^2,
    and the total weight decays to kappa times its value."""
    params = preset("mmr").with_(rho=rho, drift_per_day=3.0)
    b = experienced(preset("mmr").with_(rho=rho), seed)
    g = gammas(params, 1.0, np.full(len(b), days))
    d = diffuse(b, g, params)
    np.testing.assert_array_equal(d.mu, b.mu)
    np.testing.assert_allclose(d.sigma**2, b.sigma**2 + g**2, rtol=1e-12)
    np.testing.assert_allclose(robust_average(d), b.mu, rtol=0, atol=1e-8)
    kappa = b.sigma**2 / d.sigma**2
    np.testing.assert_allclose(total_weight(d), kappa * total_weight(b), rtol=1e-12)


@SETTINGS
@given(variants, st.integers(0, 10_000), st.floats(0.1, 4.0))
def test_sigma_after_round(params, seed, weight):
    """Eq. 8 incrementally: sigma_new = (sigma'^-2 + beta^-2)^-1/2."""
    b = experienced(params, seed)
    after = rate_round(b, np.arange(len(b)) + 1, params, weight=weight, time=10 * DAY).after
    sig_drifted = np.hypot(b.sigma, params.gamma(weight))
    np.testing.assert_allclose(after.sigma, (sig_drifted**-2 + params.beta(weight) ** -2) ** -0.5, rtol=1e-12)


@SETTINGS
@given(st.integers(0, 10_000), st.integers(1, 4))
def test_history_fold_preserves_total_weight(seed, limit):
    b = experienced(preset("mmr"), seed, rounds=5)
    before = total_weight(b)
    folded = fold_oldest(b.copy(), limit)
    np.testing.assert_allclose(total_weight(folded), before, rtol=1e-12)
    assert np.all(folded.n_factors == np.minimum(b.n_factors, np.where(b.n_factors >= limit, b.n_factors - 1, b.n_factors)))
