"""Synthetic rounds as in the paper's Section 6.1 (Table 1: 10K players, 50 rounds of 2,500), seeded:
skills N(SKILL_MEAN, SKILL_SD^2) drift by N(0, DRIFT_SD^2) a round; ``round_size`` players perform at
skill + N(0, PERF_SD^2), ranked by performance (``tie_quantum > 0`` rounds it to a grid: ties).
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from stream.contracts import RoundResult, Standing

SKILL_MEAN = 1500.0
SKILL_SD = 350.0
PERF_SD = 200.0
DRIFT_SD = 35.0
START_TIME = 1_600_000_000.0
"""Epoch seconds of round 0; round k occurs ROUND_INTERVAL_S * k later."""
ROUND_INTERVAL_S = 86_400.0


def synthetic_rounds(
    n_players: int = 10_000,
    n_rounds: int = 50,
    round_size: int = 2_500,
    seed: int = 0,
    *,
    tie_quantum: float = 0.0,
    ladder: str = "default",
    id_prefix: str = "syn-",
) -> Iterator[RoundResult]:
    """Yield the rounds one at a time (see the module docstring); round k's id is ``id_prefix`` + k (5 digits)."""
    if not 2 <= round_size <= n_players:
        raise ValueError("need 2 <= round_size <= n_players")
    rng = np.random.default_rng(seed)
    skill = rng.normal(SKILL_MEAN, SKILL_SD, n_players)
    names = np.array([f"p{i:0{len(str(n_players - 1))}d}" for i in range(n_players)])
    for k in range(n_rounds):
        who = rng.choice(n_players, size=round_size, replace=False)
        perf = skill[who] + rng.normal(0.0, PERF_SD, round_size)
        if tie_quantum > 0:
            perf = np.round(perf / tie_quantum) * tie_quantum
        order = np.argsort(-perf, kind="stable")
        sorted_perf = perf[order]
        # competition ranking: 1 + number of strictly better performances
        ranks = np.searchsorted(-sorted_perf, -sorted_perf, side="left") + 1
        yield RoundResult(
            round_id=f"{id_prefix}{k:05d}", ladder=ladder, occurred_at=START_TIME + ROUND_INTERVAL_S * k,
            standings=list(map(Standing, names[who[order]].tolist(), ranks.tolist())),
        )
        skill += rng.normal(0.0, DRIFT_SD, n_players)


def write_jsonl(rounds: Iterable[RoundResult], path: Path) -> int:
    """Write one RoundResult JSON per line (gzip if the name ends in .gz); returns the count."""
    opener = gzip.open if path.suffix == ".gz" else open
    count = 0
    with opener(path, "wt", encoding="utf-8") as fh:
        for rnd in rounds:
            fh.write(rnd.to_json())
            fh.write("\n")
            count += 1
    return count
