"""Team leagues: held-out prediction accuracy and speed of Elo-MMR-teams, TrueSkill (ours, and the
``trueskill`` package as the speed reference) and openskill.py's PlackettLuce, same run.

Run by hand:  python bench/teams.py [--rounds N --players N --seed N]

Simulation (from true skills, known only to the simulator): a pool of players with skills
s ~ N(0, 1); a round draws its players at random and splits them into teams; a player plays a
share w of the match (partial play: with probability 0.2, w ~ U(0.2, 1), else 1); his performance
is s + N(0, 1) and his team's is sum_i w_i perf_i + N(0, 0.5^2); teams are ranked by performance.
Leagues: 2 teams of 5, and 10 squads of 3.

Scoring, as ``stream replay --metrics`` defines it (stream.batch.metrics), on teams: before each
round's update, every team's predicted strength is sum_i w_i (mu_i - mu_prior) (the share-weighted
contribution of its members relative to a newcomer, the same predictor for every model); the
pair metric (100 x share of team pairs ordered right, higher is better) and rank deviation (lower
is better) are computed over the round's teams, weighted by the number of teams, for rounds with
index >= rounds // 10 (the first 10 % only train).  Speed: rounds/s of each model's rating calls
alone (simulation and scoring excluded).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stream.batch.metrics import SKIPPED_FRACTION_DENOMINATOR, pair_metric, rank_deviation  # noqa: E402
from stream.engine import PlayerBatch, preset  # noqa: E402
from stream.engine.ratings import Ratings  # noqa: E402
from stream.engine.teams import rate_team_round  # noqa: E402
from stream.engine.trueskill import TrueSkillParams, rate_teams  # noqa: E402

DAY = 86_400.0


@dataclass
class Round:
    """One simulated round: players (pool indices), their team, shares played, team ranks."""

    players: np.ndarray
    team: np.ndarray
    weights: np.ndarray
    ranks: np.ndarray


def simulate(teams: int, size: int, rounds: int, pool: int, seed: int) -> list[Round]:
    rng = np.random.default_rng(seed)
    skill = rng.normal(0.0, 1.0, pool)
    out = []
    for _ in range(rounds):
        players = rng.choice(pool, teams * size, replace=False)
        team = np.repeat(np.arange(teams), size)
        weights = np.where(rng.random(teams * size) < 0.2, rng.uniform(0.2, 1.0, teams * size), 1.0)
        perf = skill[players] + rng.normal(0.0, 1.0, teams * size)
        team_perf = np.bincount(team, weights=weights * perf, minlength=teams) + rng.normal(0.0, 0.5, teams)
        ranks = np.argsort(np.argsort(-team_perf)) + 1
        out.append(Round(players, team, weights, ranks))
    return out


Rater = Callable[[Round, int], None]
"""Rates round ``index``; the rater's ``mu`` array (per pool player) is read before the call."""


class EloMMRTeams:
    name = "elo-mmr-teams (mmr)"

    def __init__(self, pool: int) -> None:
        self.params = preset("mmr")
        self.batch = PlayerBatch.new(pool, self.params)
        self.prior = self.params.mu_noob

    @property
    def mu(self) -> np.ndarray:
        return self.batch.mu

    def rate(self, rnd: Round, index: int) -> None:
        before = self.batch.take(rnd.players)
        update = rate_team_round(before, rnd.team, rnd.ranks, rnd.weights, self.params, time=1.7e9 + index * DAY)
        self._scatter(rnd.players, update.after)

    def _scatter(self, rows: np.ndarray, after: PlayerBatch) -> None:
        for name in ("mu", "sigma", "mu0", "w0", "n_factors", "rounds", "last_time"):
            getattr(self.batch, name)[rows] = getattr(after, name)
        width = after.p.shape[1]
        for name in ("p", "w_arg", "w_out"):
            table = getattr(self.batch, name)
            if table.shape[1] < width:
                grown = np.zeros((table.shape[0], width))
                grown[:, :table.shape[1]] = table
                setattr(self.batch, name, grown)
                table = grown
            table[rows] = 0.0
            table[rows, :width] = getattr(after, name)


class TrueSkillOurs:
    name = "trueskill (ours)"

    def __init__(self, pool: int) -> None:
        self.params = TrueSkillParams()
        self.ratings = Ratings.new(pool, self.params)
        self.prior = self.params.mu_noob

    @property
    def mu(self) -> np.ndarray:
        return self.ratings.mu

    def rate(self, rnd: Round, index: int) -> None:
        rows = rnd.players
        before = Ratings(self.ratings.mu[rows], self.ratings.sigma[rows], self.ratings.rounds[rows])
        after = rate_teams(before, rnd.team, rnd.ranks, rnd.weights, self.params).after
        self.ratings.mu[rows], self.ratings.sigma[rows], self.ratings.rounds[rows] = after.mu, after.sigma, after.rounds


class PackageRater:
    """A rating package's own objects (one per player), rated round by round through its
    ``rate(groups, ranks=, weights=)``, as its users call it."""

    name = ""

    def __init__(self, model: Any, ratings: list[Any], prior: float) -> None:
        self.model, self.ratings, self.prior = model, ratings, prior

    @property
    def mu(self) -> np.ndarray:
        return np.array([r.mu for r in self.ratings])

    def rate(self, rnd: Round, index: int) -> None:
        k = int(rnd.team.max()) + 1
        groups = [[self.ratings[p] for p in rnd.players[rnd.team == j]] for j in range(k)]
        weights = [rnd.weights[rnd.team == j].tolist() for j in range(k)]
        out = self.model.rate(groups, ranks=rnd.ranks.tolist(), weights=weights)
        for j in range(k):
            for p, r in zip(rnd.players[rnd.team == j], out[j]):
                self.ratings[p] = r


class TrueSkillPackage(PackageRater):
    name = "trueskill (package)"

    def __init__(self, pool: int) -> None:
        import trueskill

        env = trueskill.TrueSkill(backend="scipy")
        super().__init__(env, [env.create_rating() for _ in range(pool)], env.mu)


class PlackettLuce(PackageRater):
    name = "openskill PlackettLuce"

    def __init__(self, pool: int) -> None:
        from openskill.models import PlackettLuce as Model

        model = Model()
        super().__init__(model, [model.rating() for _ in range(pool)], model.mu)


def evaluate(model: EloMMRTeams | TrueSkillOurs | TrueSkillPackage | PlackettLuce,
             rounds: list[Round]) -> tuple[float, float, float]:
    """(pair metric, rank deviation, rounds/s) of ``model`` over ``rounds``."""
    first = len(rounds) // SKIPPED_FRACTION_DENOMINATOR
    pair_sum = rank_sum = 0.0
    weight = 0
    seconds = 0.0
    for index, rnd in enumerate(rounds):
        if index >= first:
            k = int(rnd.team.max()) + 1
            strength = np.bincount(rnd.team, weights=rnd.weights * (model.mu[rnd.players] - model.prior), minlength=k)
            pair, n = pair_metric(strength, rnd.ranks)
            rank, _ = rank_deviation(strength, rnd.ranks)
            pair_sum += pair * n
            rank_sum += rank * n
            weight += n
        start = time.perf_counter()
        model.rate(rnd, index)
        seconds += time.perf_counter() - start
    return pair_sum / weight, rank_sum / weight, len(rounds) / seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3000)
    ap.add_argument("--players", type=int, default=500, help="pool size per league")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-package", action="store_true", help="leave out the (slow) trueskill package")
    args = ap.parse_args()
    print(f"# bench/teams.py  {platform.processor() or platform.machine()}  cpus={os.cpu_count()}  "
          f"rounds={args.rounds} pool={args.players} seed={args.seed}")
    models = [EloMMRTeams, TrueSkillOurs, PlackettLuce] + ([] if args.no_package else [TrueSkillPackage])
    for teams, size in ((2, 5), (10, 3)):
        rounds = simulate(teams, size, args.rounds, args.players, args.seed + teams)
        print(f"\n{teams} teams of {size}, partial play (20 % of players w ~ U(0.2, 1))")
        print(f"{'model':26} {'pair %':>8} {'rank dev':>9} {'rounds/s':>10}")
        for cls in models:
            pair, rank, speed = evaluate(cls(args.players), rounds)
            print(f"{cls.name:26} {pair:8.2f} {rank:9.3f} {speed:10.0f}")


if __name__ == "__main__":
    main()
