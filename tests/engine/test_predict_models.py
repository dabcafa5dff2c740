"""Model-aware predictions (stream/engine/predict.py dispatching to each model's ``pair_odds``):
every rating-only model against an independent computation of its own formula (the ``trueskill``
package for TrueSkill, the Glicko paper's E, the seed's Fermi function, scalar re-derivations for
the others), and the properties every model's pair odds must have."""

from __future__ import annotations

import json
import math
from statistics import NormalDist

import numpy as np
import pytest
import trueskill as ts
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.engine import codeforces
from stream.engine.glicko import GlickoParams
from stream.engine.ladders import parse_ladders
from stream.engine.models import MODELS
from stream.engine.predict import (
    PerformanceModel, RatedModel, outcome_model, pair_matrices, predict_lobby, rank_distribution,
)
from tests.engine.oracles import expected_ranks, match_quality
from stream.engine.trueskill import TrueSkillParams, draw_margin

TRUESKILL = MODELS["trueskill"]


def _env(params: TrueSkillParams) -> ts.TrueSkill:
    return ts.TrueSkill(mu=params.mu_noob, sigma=params.sig_noob, beta=params.beta, tau=params.tau,
                        draw_probability=params.draw_probability, backend="scipy")


@pytest.mark.parametrize("mus, sigmas", [
    ([25.0, 25.0], [25 / 3, 25 / 3]),
    ([30.0, 22.0], [2.0, 6.0]),
    ([35.0, 24.0, 18.0, 26.5], [1.5, 3.0, 8.0, 4.0]),
    ([20.0, 21.0, 22.0, 23.0, 24.0, 25.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
])
def test_trueskill_quality_is_the_packages(mus: list[float], sigmas: list[float]) -> None:
    """Quality of a free-for-all of single players = the package's ``quality`` of the ratings the
    next round starts from (sigma with tau added); also in any order of the lobby."""
    params = TRUESKILL.params
    assert isinstance(params, TrueSkillParams)
    env = _env(params)
    groups = [(env.create_rating(mu, math.sqrt(s * s + params.tau ** 2)),) for mu, s in zip(mus, sigmas)]
    expected = env.quality(groups)
    model = RatedModel(TRUESKILL, params)
    assert match_quality(np.array(mus), np.array(sigmas), model) == pytest.approx(expected, rel=1e-9)
    perm = np.random.default_rng(1).permutation(len(mus))
    assert match_quality(np.array(mus)[perm], np.array(sigmas)[perm], model) == pytest.approx(expected, rel=1e-9)


def test_trueskill_win_and_draw_probability() -> None:
    """Win/draw of a 1-vs-1 from the package's own draw margin and normal cdf; with no skill
    uncertainty and equal skills the draw probability is the configured one."""
    params = TrueSkillParams()
    env = _env(params)
    mu_a, s_a, mu_b, s_b = 29.0, 3.0, 24.0, 5.0
    eps = ts.calc_draw_margin(params.draw_probability, 2, env)
    assert draw_margin(params, 2) == pytest.approx(eps, rel=1e-12)
    c = math.sqrt(2 * params.beta ** 2 + s_a ** 2 + s_b ** 2 + 2 * params.tau ** 2)
    d = mu_a - mu_b
    win, draw = RatedModel(TRUESKILL, params).odds(mu_a, s_a, mu_b, s_b)
    assert float(win) == pytest.approx(env.cdf((d - eps) / c), abs=1e-12)
    assert float(draw) == pytest.approx(env.cdf((eps - d) / c) - env.cdf((-eps - d) / c), abs=1e-12)
    exact = TrueSkillParams(tau=0.0)
    _, draw0 = RatedModel(TRUESKILL, exact).odds(25.0, 0.0, 25.0, 0.0)
    assert float(draw0) == pytest.approx(exact.draw_probability, abs=1e-12)


def test_glicko_is_the_papers_expected_score() -> None:
    """E = 1 / (1 + 10^(-g(sqrt(RD_a^2 + RD_b^2)) (r_a - r_b) / 400)) with the paper's q and g, at
    the default beta (whose scale is the paper's 400) and no drift."""
    params = GlickoParams(sig_drift=0.0)
    q = math.log(10) / 400

    def paper(r_a: float, rd_a: float, r_b: float, rd_b: float) -> float:
        rd = math.sqrt(rd_a ** 2 + rd_b ** 2)
        g = 1 / math.sqrt(1 + 3 * q * q * rd * rd / math.pi ** 2)
        return 1 / (1 + 10 ** (-g * (r_a - r_b) / 400))

    model = RatedModel(MODELS["glicko"], params)
    for r_a, rd_a, r_b, rd_b in [(1700, 50, 1500, 350), (1400, 30, 1550, 100), (1500, 350, 1500, 350)]:
        win, draw = model.odds(r_a, rd_a, r_b, rd_b)
        assert float(win) == pytest.approx(paper(r_a, rd_a, r_b, rd_b), abs=1e-12) and float(draw) == 0.0
    drifted = RatedModel(MODELS["glicko"], GlickoParams())  # the round's drift widens both deviations
    win, _ = drifted.odds(1700, 50, 1500, 60)
    assert float(win) == pytest.approx(paper(1700, math.hypot(50, 35), 1500, math.hypot(60, 35)), abs=1e-12)


def test_elo_multiplayer_is_the_seeds_fermi_function() -> None:
    """Default temperature 400/ln 10: chess Elo's 1 / (1 + 10^(-d/400)); expected ranks add up."""
    model = RatedModel(MODELS["elo-multiplayer"], MODELS["elo-multiplayer"].params)
    win, _ = model.odds(1600.0, 0.0, 1400.0, 0.0)
    assert float(win) == pytest.approx(1 / (1 + 10 ** (-200 / 400)), abs=1e-12)
    mu = np.array([1600.0, 1500.0, 1400.0])
    ranks = expected_ranks(mu, np.full(3, 350.0), model)
    fermi = [[1 / (1 + 10 ** (-(a - b) / 400)) for b in mu] for a in mu]
    assert ranks == pytest.approx([1 + sum(fermi[j][i] for j in range(3) if j != i) for i in range(3)], abs=1e-12)


def test_codeforces_expected_rank_is_the_systems() -> None:
    """Expected rank = the system's ex_i = (n + 1 - sum_j tanh(c (mu_i - mu_j))) / 2 (its rate_round)."""
    params = codeforces.CodeforcesParams()
    rng = np.random.default_rng(3)
    mu = rng.normal(1500, 300, 12)
    for weight in (1.0, 0.5):
        c = 0.5 * (math.pi / math.sqrt(3)) / (params.beta / math.sqrt(weight))
        at_mu, _ = codeforces.tanh_sum(mu, mu, c)
        ranks = expected_ranks(mu, np.full(12, 350.0), RatedModel(MODELS["codeforces"], params, weight))
        assert ranks == pytest.approx(0.5 * (len(mu) + 1 - at_mu), abs=1e-9)


def test_topcoder_and_bar_pairs() -> None:
    """Topcoder: Phi(sqrt(W) d / sqrt(s_a^2 + s_b^2)); BAR: logistic(d / c), c^2 = s_a^2 + s_b^2
    (after drift) + 2 beta^2 / W, recomputed with the standard library."""
    tc = RatedModel(MODELS["topcoder"], MODELS["topcoder"].params, weight=0.7)
    win, _ = tc.odds(1800.0, 200.0, 1500.0, 350.0)
    assert float(win) == pytest.approx(NormalDist().cdf(math.sqrt(0.7) * 300 / math.hypot(200, 350)), abs=1e-12)
    bar_params = MODELS["bar"].params
    bar = RatedModel(MODELS["bar"], bar_params, weight=2.0)
    win, _ = bar.odds(1800.0, 200.0, 1500.0, 350.0)
    drift = bar_params.sig_drift  # type: ignore[attr-defined]
    beta = bar_params.beta  # type: ignore[attr-defined]
    c = math.sqrt(200 ** 2 + 350 ** 2 + 2 * drift ** 2 + 2 * beta ** 2 / 2.0)
    assert float(win) == pytest.approx(1 / (1 + math.exp(-math.pi / math.sqrt(3) * 300 / c)), abs=1e-12)


ratings = st.tuples(st.floats(-3000, 5000), st.floats(0.0, 600.0))


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(MODELS)), a=ratings, b=ratings, weight=st.floats(0.1, 4.0))
def test_pair_odds_properties(name: str, a: tuple[float, float], b: tuple[float, float], weight: float) -> None:
    """Every model: probabilities in [0, 1]; P(a ahead) + P(b ahead) + P(tie) = 1 with the tie
    symmetric; with equal deviations the better-rated player is favoured."""
    model = MODELS[name]
    scale = 25.0 / 1500.0 if name == "trueskill" else 1.0  # TrueSkill's 25-point scale
    (mu_a, s_a), (mu_b, s_b) = a, b
    mu_a, s_a, mu_b, s_b = mu_a * scale, s_a * scale + 1e-3, mu_b * scale, s_b * scale + 1e-3
    rated = RatedModel(model, model.params, weight)
    ab, tie_ab = (float(v) for v in rated.odds(mu_a, s_a, mu_b, s_b))
    ba, tie_ba = (float(v) for v in rated.odds(mu_b, s_b, mu_a, s_a))
    assert 0.0 <= ab <= 1.0 and 0.0 <= tie_ab <= 1.0
    assert tie_ab == pytest.approx(tie_ba, abs=1e-12)
    assert ab + ba == pytest.approx(1.0 - tie_ab, abs=1e-9)
    better, _ = (float(v) for v in rated.odds(max(mu_a, mu_b), s_a, min(mu_a, mu_b), s_a))
    worse, _ = (float(v) for v in rated.odds(min(mu_a, mu_b), s_a, max(mu_a, mu_b), s_a))
    assert better >= worse


@pytest.mark.parametrize("name", ["codeforces", "elo-multiplayer", "topcoder"])
def test_sampled_ranks_agree_with_exact_expected_ranks(name: str) -> None:
    """Where the model's sampler is exact (Plackett-Luce, Thurstone), the Monte Carlo rank
    distribution's mean rank matches the exact expected rank."""
    model = RatedModel(MODELS[name], MODELS[name].params)
    mu, sigma = np.array([1800.0, 1600.0, 1500.0, 1450.0, 1200.0]), np.array([80.0, 150.0, 350.0, 200.0, 100.0])
    dist = rank_distribution(mu, sigma, model, samples=40_000, seed=2)
    assert dist @ np.arange(1, 6) == pytest.approx(expected_ranks(mu, sigma, model), abs=0.03)


def test_outcome_model_dispatch_by_ladder() -> None:
    """A ladder's predictions use its model: Elo-MMR ladders the performance model (unchanged),
    rating-only ladders their model; TrueSkill's answer carries ties and its own quality."""
    ladders = parse_ladders(json.dumps({"ts": {"model": "trueskill"}, "g": {"model": "glicko", "params": {"beta": 200.0}}}))
    assert isinstance(outcome_model(ladders.of("elsewhere")), PerformanceModel)
    glicko = outcome_model(ladders.of("g"), 2.0)
    assert isinstance(glicko, RatedModel) and glicko.params.beta == 200.0 and glicko.weight == 2.0  # type: ignore[attr-defined]
    assert glicko.describe("glicko", 2.0)["params"]["beta"] == 200.0
    ts_model = outcome_model(ladders.of("ts"))
    mu, sigma = np.array([27.0, 25.0, 20.0]), np.array([2.0, 25 / 3, 4.0])
    pred = predict_lobby(mu, sigma, ts_model, samples=5000)
    ahead, tie = pair_matrices(mu, sigma, ts_model)
    assert pred.tie is not None and pred.tie[0, 1] > 0 and np.allclose(pred.tie, pred.tie.T, atol=1e-15)
    assert (ahead + ahead.T + tie)[np.triu_indices(3, 1)] == pytest.approx(1.0)
    assert pred.expected_rank.sum() == pytest.approx(6.0)  # 1 + 2 + 3: ties count half each way
    assert pred.quality == pytest.approx(match_quality(mu, sigma, ts_model))
    assert pred.expected_order.tolist() == [0, 1, 2]


@settings(max_examples=30, deadline=None)
@given(name=st.sampled_from(sorted(MODELS)), lobby=st.lists(ratings, min_size=2, max_size=6),
       weight=st.floats(0.1, 4.0))
def test_lobby_matrices_equal_the_pairs_one_by_one(name: str, lobby: list[tuple[float, float]], weight: float) -> None:
    """The lobby's vectorised matrices = each pair's odds computed alone; the expected ranks add
    up to 1 + ... + n (every pair's outcomes sum to one)."""
    model = MODELS[name]
    scale = 25.0 / 1500.0 if name == "trueskill" else 1.0
    mu = np.array([m for m, _ in lobby]) * scale
    sigma = np.array([s for _, s in lobby]) * scale + 1e-3
    rated = RatedModel(model, model.params, weight)
    ahead, tie = pair_matrices(mu, sigma, rated)
    n = len(lobby)
    for i in range(n):
        for j in range(n):
            if i != j:
                one, draw = rated.odds(float(mu[i]), float(sigma[i]), float(mu[j]), float(sigma[j]))
                assert ahead[i, j] == pytest.approx(float(one), abs=1e-12) and tie[i, j] == pytest.approx(float(draw), abs=1e-12)
    assert expected_ranks(mu, sigma, rated).sum() == pytest.approx(n * (n + 1) / 2, abs=1e-9)


@given(st.floats(0, 3000), st.floats(1, 500), st.floats(0, 3000), st.floats(1, 500),
       st.sampled_from(["logistic", "gaussian", "trueskill", "glicko"]))
def test_a_duel_has_one_figure_everywhere(mu_a: float, s_a: float, mu_b: float, s_b: float, kind: str) -> None:
    """Issue 29 item 9: for two players P(first) is P(ahead) (a tie counted half, as expected_rank
    counts it), exactly; the two sum to 1 and the distribution's mean is the expected rank."""
    if kind == "trueskill":
        model: object = RatedModel(TRUESKILL, TRUESKILL.params)
        mu = np.array([25.0 + (mu_a - 1500) / 100, 25.0 + (mu_b - 1500) / 100])
        sigma = np.array([s_a / 60, s_b / 60])
    elif kind == "glicko":
        model = RatedModel(MODELS["glicko"], MODELS["glicko"].params)
        mu, sigma = np.array([mu_a, mu_b]), np.array([s_a, s_b])
    else:
        model = PerformanceModel(beta=125.0, gamma=26.0, kind=kind)  # type: ignore[arg-type]
        mu, sigma = np.array([mu_a, mu_b]), np.array([s_a, s_b])
    pred = predict_lobby(mu, sigma, model)  # type: ignore[arg-type]
    ahead, tie = pair_matrices(mu, sigma, model)  # type: ignore[arg-type]
    first = pred.rank_distribution[:, 0]
    assert first[0] == pytest.approx(ahead[0, 1] + 0.5 * tie[0, 1], abs=1e-12)
    assert first[0] + first[1] == pytest.approx(1.0, abs=1e-12)
    assert pred.rank_distribution @ np.array([1.0, 2.0]) == pytest.approx(pred.expected_rank, abs=1e-9)
