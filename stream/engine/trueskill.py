"""TrueSkill (Herbrich, Minka & Graepel 2006; seed 001): teams, draws and partial play, by
expectation propagation on the factor graph of the ``trueskill`` PyPI package, with its defaults
(mu 25, sigma 25/3, beta 25/6, tau 25/300, draw probability 0.10) and its message schedule.

Per round (teams sorted by rank, stable): skill ~ N(mu, sigma^2 + tau^2); performance
p_i ~ N(skill_i, beta^2); team sum t_j = sum_i w_i p_i (w_i: share of the match, at least the
package's min_delta 1e-4); d_j = t_j - t_{j+1} truncated to d_j > eps (win) or |d_j| <= eps
(draw), eps = Phi^-1((draw_probability + 1) / 2) sqrt(n_j + n_{j+1}) beta.  The player layers
are numpy; the team chain is iterated on scalars, forwards and backwards, until the largest change
is <= 1e-4 (at most 10 sweeps; one is exact for two teams).  No round weight, no performance ceiling.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from scipy.special import ndtr

from stream.engine.ratings import ModelParams, ModelRound, PairOdds, Ratings

MU = 25.0
SIGMA = MU / 3
MIN_DELTA = 1e-4
"""Convergence threshold of the team chain, and the smallest player weight (the package's DELTA)."""
MAX_SWEEPS = 10
"""Forward-backward sweeps of the team chain at most (the package's schedule)."""
_NORMAL = NormalDist()
_SQRT2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@dataclass(frozen=True, slots=True)
class TrueSkillParams(ModelParams):
    """TrueSkill's parameters; defaults those of the ``trueskill`` package."""

    mu_noob: float = MU
    sig_noob: float = SIGMA
    beta: float = SIGMA / 2
    tau: float = SIGMA / 100
    draw_probability: float = 0.10

    def __post_init__(self) -> None:
        self._require(self.beta > 0 and self.tau >= 0 and 0 <= self.draw_probability < 1,
                      "need beta > 0, tau >= 0 and 0 <= draw_probability < 1")


def draw_margin(params: TrueSkillParams, size: int) -> float:
    """eps of a truncation between two teams of ``size`` players together."""
    return _NORMAL.inv_cdf((params.draw_probability + 1.0) / 2.0) * math.sqrt(size) * params.beta


def _cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / _SQRT2)


def _pdf(x: float) -> float:
    return _INV_SQRT_2PI * math.exp(-0.5 * x * x)


def _v_win(diff: float, margin: float) -> float:
    x = diff - margin
    denom = _cdf(x)
    return _pdf(x) / denom if denom else -x


def _w_win(diff: float, margin: float) -> float:
    x = diff - margin
    v = _v_win(diff, margin)
    w = v * (v + x)
    if not 0 < w < 1:
        raise FloatingPointError("truncated-Gaussian variance out of (0, 1): the winner is rated far below the loser")
    return w


def _v_draw(diff: float, margin: float) -> float:
    a, b = margin - abs(diff), -margin - abs(diff)
    denom = _cdf(a) - _cdf(b)
    numer = _pdf(b) - _pdf(a)
    return (numer / denom if denom else a) * (-1.0 if diff < 0 else 1.0)


def _w_draw(diff: float, margin: float) -> float:
    a, b = margin - abs(diff), -margin - abs(diff)
    denom = _cdf(a) - _cdf(b)
    if not denom:
        raise FloatingPointError("draw of teams rated too far apart")
    v = _v_draw(abs(diff), margin)
    return v * v + (a * _pdf(a) - b * _pdf(b)) / denom


class _Var:
    """A variable node of the team chain: its marginal (pi, tau) and its factors' messages."""

    __slots__ = ("pi", "tau", "msgs")

    def __init__(self) -> None:
        self.pi = 0.0
        self.tau = 0.0
        self.msgs: dict[object, tuple[float, float]] = {}

    def msg(self, factor: object) -> tuple[float, float]:
        return self.msgs.get(factor, (0.0, 0.0))

    def cavity(self, factor: object) -> tuple[float, float]:
        """The marginal without ``factor``'s message."""
        pi, tau = self.msg(factor)
        return self.pi - pi, self.tau - tau

    def _set(self, pi: float, tau: float) -> float:
        pi_delta = abs(self.pi - pi)
        delta = 0.0 if pi_delta == math.inf else max(abs(self.tau - tau), math.sqrt(pi_delta))
        self.pi, self.tau = pi, tau
        return delta

    def update_message(self, factor: object, pi: float, tau: float) -> float:
        old_pi, old_tau = self.msg(factor)
        self.msgs[factor] = (pi, tau)
        return self._set(self.pi - old_pi + pi, self.tau - old_tau + tau)

    def update_value(self, factor: object, pi: float, tau: float) -> float:
        old_pi, old_tau = self.msg(factor)
        self.msgs[factor] = (pi + old_pi - self.pi, tau + old_tau - self.tau)
        return self._set(pi, tau)


def _mu(pi: float, tau: float) -> float:
    return tau / pi if pi else 0.0


def _sum_update(target: _Var, factor: object, terms: list[_Var], coeffs: list[float]) -> float:
    """A sum factor's message to ``target`` from the cavities of ``terms`` weighted by ``coeffs``."""
    pi_inv = 0.0
    mu = 0.0
    for var, coeff in zip(terms, coeffs):
        pi, tau = var.cavity(factor)
        mu += coeff * _mu(pi, tau)
        if pi_inv == math.inf:
            continue
        pi_inv = pi_inv + coeff * coeff / pi if pi else math.inf
    pi = 1.0 / pi_inv
    return target.update_message(factor, pi, pi * mu)


class _Diff:
    """d = left - right, and the truncation of d (win or draw)."""

    __slots__ = ("d", "left", "right", "margin", "draw")

    def __init__(self, left: _Var, right: _Var, margin: float, draw: bool) -> None:
        self.d, self.left, self.right, self.margin, self.draw = _Var(), left, right, margin, draw

    def down(self) -> None:
        _sum_update(self.d, self, [self.left, self.right], [1.0, -1.0])

    def up_left(self) -> None:
        _sum_update(self.left, self, [self.d, self.right], [1.0, 1.0])

    def up_right(self) -> None:
        _sum_update(self.right, self, [self.left, self.d], [1.0, -1.0])

    def truncate(self) -> float:
        pi, tau = self.d.cavity("trunc")
        sqrt_pi = math.sqrt(pi)
        args = (tau / sqrt_pi, self.margin * sqrt_pi)
        v, w = (_v_draw(*args), _w_draw(*args)) if self.draw else (_v_win(*args), _w_win(*args))
        return self.d.update_value("trunc", pi / (1.0 - w), (tau + sqrt_pi * v) / (1.0 - w))


def rate_teams(before: Ratings, entry: np.ndarray, entry_ranks: np.ndarray, weights: np.ndarray,
               params: TrueSkillParams) -> ModelRound:
    """One round: ``entry[i]`` player i's team (into ``entry_ranks``), ``weights`` the shares played."""
    order = np.argsort(entry_ranks, kind="stable")  # teams by rank, ties in input order
    position = np.empty_like(order)
    position[order] = np.arange(order.shape[0])
    team = position[entry]  # each player's team in rank order
    k = order.shape[0]
    w = np.maximum(weights, MIN_DELTA)
    # prior (with dynamics) and likelihood, down: every player at once
    prior_pi = 1.0 / (before.sigma**2 + params.tau**2)
    prior_tau = prior_pi * before.mu
    a = 1.0 / (1.0 + params.beta**2 * prior_pi)
    perf_pi, perf_tau = a * prior_pi, a * prior_tau
    perf_mu, perf_var = perf_tau / perf_pi, 1.0 / perf_pi
    # team sums, down: t_j ~ N(sum w mu, sum w^2 var)
    team_mu = np.bincount(team, weights=w * perf_mu, minlength=k)
    team_var = np.bincount(team, weights=w * w * perf_var, minlength=k)
    sizes = np.bincount(team, minlength=k)
    chain = [_Var() for _ in range(k)]
    for j, var in enumerate(chain):
        precision = 1.0 / float(team_var[j])
        var.update_message("sum", precision, precision * float(team_mu[j]))
    ranks = entry_ranks[order]
    diffs = [_Diff(chain[j], chain[j + 1], draw_margin(params, int(sizes[j] + sizes[j + 1])),
                   bool(ranks[j] == ranks[j + 1])) for j in range(k - 1)]
    _run_chain(diffs)
    diffs[0].up_left()
    diffs[-1].up_right()
    # team sums, up: message to each member from the team's cavity and the other members
    # (a team whose cavity is flat, pi 0, sends flat messages: its members keep their prior, as in the package)
    cavity = np.array([var.cavity("sum") for var in chain])
    flat = cavity[:, 0] == 0.0
    cav_pi = np.where(flat, 1.0, cavity[:, 0])
    cav_mu, cav_var = np.where(flat, 0.0, cavity[:, 1] / cav_pi), 1.0 / cav_pi
    msg_mu = (cav_mu[team] - (team_mu[team] - w * perf_mu)) / w
    msg_var = (cav_var[team] + team_var[team] - w * w * perf_var) / (w * w)
    msg_pi = np.where(flat[team], 0.0, 1.0 / msg_var)
    msg_tau = msg_pi * msg_mu
    # likelihood, up, onto the prior
    b = 1.0 / (1.0 + params.beta**2 * msg_pi)
    pi = prior_pi + b * msg_pi
    tau = prior_tau + b * msg_tau
    return ModelRound(Ratings(tau / pi, np.sqrt(1.0 / pi), before.rounds + 1), None)


def _run_chain(diffs: list[_Diff]) -> None:
    """The package's schedule over the team differences (see the module docstring)."""
    for _ in range(MAX_SWEEPS):
        if len(diffs) == 1:
            diffs[0].down()
            delta = diffs[0].truncate()
        else:
            delta = 0.0
            for diff in diffs[:-1]:
                diff.down()
                delta = max(delta, diff.truncate())
                diff.up_right()
            for diff in diffs[:0:-1]:
                diff.down()
                delta = max(delta, diff.truncate())
                diff.up_left()
        if delta <= MIN_DELTA:
            break


def rate_round(before: Ratings, ranks: np.ndarray, params: TrueSkillParams, *, weight: float = 1.0,
               perf_ceiling: float = math.inf) -> ModelRound:
    """An individual round: every player a team of one, full time."""
    n = ranks.shape[0]
    return rate_teams(before, np.arange(n), ranks, np.ones(n), params)


def pair_odds(mu_a: np.ndarray, sigma_a: np.ndarray, mu_b: np.ndarray, sigma_b: np.ndarray, params: TrueSkillParams,
              *, weight: float = 1.0) -> PairOdds:
    """A 1-vs-1's outcome probabilities (Herbrich et al. 2006, eq. (1)-(2)): d = mu_a - mu_b,
    c^2 = 2 beta^2 + sigma_a^2 + sigma_b^2 + 2 tau^2, P(a wins) = Phi((d - eps) / c),
    P(draw) = Phi((eps - d) / c) - Phi((-eps - d) / c)."""
    d = np.asarray(mu_a, dtype=float) - np.asarray(mu_b, dtype=float)
    c = np.sqrt(2.0 * params.beta**2 + np.square(sigma_a) + np.square(sigma_b) + 2.0 * params.tau**2)
    eps = draw_margin(params, 2)
    ahead = ndtr((d - eps) / c)
    draw = np.clip(ndtr((eps - d) / c) - ndtr((-eps - d) / c), 0.0, 1.0)
    return ahead, draw


def sample_performances(mu: np.ndarray, sigma: np.ndarray, params: TrueSkillParams, *, weight: float,
                        rng: np.random.Generator, samples: int) -> np.ndarray:
    """Performances N(mu, sigma^2 + tau^2 + beta^2) (prior and likelihood; no draws)."""
    sd = np.sqrt(np.square(sigma) + params.tau**2 + params.beta**2)
    draws: np.ndarray = mu + sd * rng.standard_normal((samples, len(mu)))
    return draws


def quality(mu: np.ndarray, sigma: np.ndarray, params: TrueSkillParams) -> float:
    """Match quality of a free-for-all as the ``trueskill`` package's ``quality`` (Herbrich et al.
    2006, Section 4): A the (n, n-1) neighbouring differences, S = diag(sigma^2 + tau^2) (tau added:
    the next round's prior), B = beta^2 A^T A, q = sqrt(det B / det(B + A^T S A))
    exp(-mu^T A (B + A^T S A)^-1 A^T mu / 2)."""
    return float(quality_many(np.asarray(mu, dtype=float)[None, :], np.asarray(sigma, dtype=float)[None, :], params)[0])


def quality_many(mu: np.ndarray, sigma: np.ndarray, params: TrueSkillParams) -> np.ndarray:
    """:func:`quality` of k lobbies of n players at once (arrays (k, n)): one stacked solve."""
    mu = np.asarray(mu, dtype=float)
    n = mu.shape[1]
    if n < 2:
        raise ValueError("match quality needs at least 2 players")
    a = np.zeros((n, n - 1))
    a[np.arange(n - 1), np.arange(n - 1)] = 1.0
    a[np.arange(1, n), np.arange(n - 1)] = -1.0
    variance = np.square(np.asarray(sigma, dtype=float)) + params.tau**2
    base = params.beta**2 * (a.T @ a)
    full = base + np.einsum("ji,kj,jl->kil", a, variance, a)
    diff = mu @ a
    _, logdet_base = np.linalg.slogdet(base)
    _, logdet_full = np.linalg.slogdet(full)
    exponent = -0.5 * np.einsum("ki,ki->k", diff, np.linalg.solve(full, diff[:, :, None])[:, :, 0])
    out: np.ndarray = np.exp(0.5 * (logdet_base - logdet_full) + exponent)
    return out

