"""Synthetic workloads shaped like what users bring (``stream generate-synthetic --profile``).

* ``contest-history`` (issue 11's shape at ``scale`` 1): ~1,000 growing rounds (median ~1,800,
  max ~17,000), ~258,000 players of heavy-tailed activity, ~9 % newcomers per round, about half of
  each round in tie groups; ``scale`` < 1 shrinks rounds and sizes alike.
* ``matches``: duels or lobbies of ``round_size`` players drawn uniformly from a pool, ranks by
  performance, one match a minute.

Skills start N(SKILL_MEAN, SKILL_SD^2) and drift; a player performs at skill + N(0, PERF_SD^2).
Fully determined by ``seed``.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from stream.batch.synthetic import DRIFT_SD, PERF_SD, SKILL_MEAN, SKILL_SD, START_TIME
from stream.contracts import RoundResult, Standing

HISTORY_ROUNDS = 1_000
HISTORY_FIRST_MEDIAN = 560.0
"""Median round size at the start of the history; it grows geometrically to HISTORY_LAST_MEDIAN."""
HISTORY_LAST_MEDIAN = 6_200.0
HISTORY_SIZE_SIGMA = 0.6
"""Log-normal spread of the round sizes around the trend."""
HISTORY_MAX_SIZE = 17_000
NEWCOMER_SHARE = 0.09
ACTIVITY_SIGMA = 1.1
"""Log-normal spread of the players' activity (how often a player enters a round)."""
TIE_PROBABILITY = 0.3
"""Chance that a player ties with the one ranked just above: 1 - 0.7^2 ~ half in tie groups."""
HISTORY_INTERVAL_S = 3.5 * 86_400.0
MATCH_INTERVAL_S = 60.0


def contest_history_rounds(scale: float = 1.0, seed: int = 0, *, ladder: str = "default",
                           id_prefix: str = "hist-") -> Iterator[RoundResult]:
    """Yield the contest-history rounds one at a time (see the module docstring)."""
    if not 0 < scale <= 1:
        raise ValueError("need 0 < scale <= 1")
    rng = np.random.default_rng(seed)
    n_rounds = max(2, round(HISTORY_ROUNDS * scale))
    trend = np.geomspace(HISTORY_FIRST_MEDIAN, HISTORY_LAST_MEDIAN, n_rounds) * scale
    sizes = np.minimum(trend * rng.lognormal(0.0, HISTORY_SIZE_SIGMA, n_rounds), HISTORY_MAX_SIZE * scale)
    sizes = np.maximum(sizes.round().astype(np.int64), 2)
    newcomers = np.maximum(np.rint(sizes * NEWCOMER_SHARE).astype(np.int64), 1)
    newcomers[0] = sizes[0]
    n_players = int(newcomers.sum())
    activity = np.log(rng.lognormal(0.0, ACTIVITY_SIGMA, n_players))  # log-weights
    skill = rng.normal(SKILL_MEAN, SKILL_SD, n_players)
    width = len(str(n_players - 1))
    joined = 0
    for k in range(n_rounds):
        returning = min(int(sizes[k] - newcomers[k]), joined)
        # weighted sampling without replacement (Gumbel top-k) among those who joined earlier
        keys = activity[:joined] + rng.gumbel(size=joined)
        old = np.argpartition(-keys, returning - 1)[:returning] if returning else np.zeros(0, np.int64)
        who = np.concatenate([old, np.arange(joined, joined + int(newcomers[k]))])
        joined += int(newcomers[k])
        perf = skill[who] + rng.normal(0.0, PERF_SD, who.shape[0])
        order = np.argsort(-perf, kind="stable")
        tie_up: np.ndarray = np.asarray(rng.random(who.shape[0]) < TIE_PROBABILITY)
        tie_up[0] = False
        # competition ranking: a tie group takes the rank of its first member
        ranks = np.maximum.accumulate(np.where(tie_up, 0, np.arange(1, who.shape[0] + 1)))
        names = [f"c{i:0{width}d}" for i in who[order].tolist()]
        yield RoundResult(round_id=f"{id_prefix}{k:05d}", ladder=ladder, occurred_at=START_TIME + HISTORY_INTERVAL_S * k,
                          standings=list(map(Standing, names, ranks.tolist())))
        skill[:joined] += rng.normal(0.0, DRIFT_SD / 4, joined)


def match_rounds(n_players: int = 2_000, n_rounds: int = 10_000, round_size: int = 2, seed: int = 0, *,
                 ladder: str = "default", id_prefix: str = "m-") -> Iterator[RoundResult]:
    """Yield ``n_rounds`` matches of ``round_size`` players from a pool of ``n_players``."""
    if not 2 <= round_size <= n_players:
        raise ValueError("need 2 <= round_size <= n_players")
    rng = np.random.default_rng(seed)
    skill = rng.normal(SKILL_MEAN, SKILL_SD, n_players)
    width = len(str(n_players - 1))
    names = [f"m{i:0{width}d}" for i in range(n_players)]
    ranks = list(range(1, round_size + 1))
    for k in range(n_rounds):
        who = rng.choice(n_players, round_size, replace=False)
        order = np.argsort(-(skill[who] + rng.normal(0.0, PERF_SD, round_size)), kind="stable")
        yield RoundResult(round_id=f"{id_prefix}{k:06d}", ladder=ladder, occurred_at=START_TIME + MATCH_INTERVAL_S * k,
                          standings=[Standing(names[i], r) for i, r in zip(who[order].tolist(), ranks)])
