"""The rounds bench/pipeline.py and bench/floor.py move: one definition, so both measure the same traffic.

* Small rounds (``size`` <= :data:`SMALL_MAX`: duels, lobbies): ``stream generate-synthetic
  --profile matches`` rounds, players drawn uniformly from a pool of :data:`SMALL_POOL`, spread
  round-robin over ``ladders`` ladders (consecutive rounds rarely share players: they pipeline).
* Big rounds: the paper's generator with a pool of twice the round size, one ladder, so each
  round shares about half its players with the previous one (the fully sequential worst case).
"""

from __future__ import annotations

import os
from dataclasses import replace

from stream.batch.profiles import match_rounds
from stream.batch.synthetic import synthetic_rounds
from stream.contracts import RoundResult

SMALL_MAX = 100
"""Largest round size drawn as matches from :data:`SMALL_POOL`."""
SMALL_POOL = 2_000
LADDERS = 2
"""Ladders the small rounds are spread over (issue 15 measured 4,000 duels over two ladders)."""
ROUNDS = {2: 4_000, 10: 4_000, 1_000: 40, 10_000: 8}
"""Rounds of the throughput run per size (any other size: :data:`DEFAULT_ROUNDS`)."""
if os.environ.get("BENCH_QUICK"):
    ROUNDS = {2: 1_000, 10: 500, 1_000: 10, 10_000: 3}
DEFAULT_ROUNDS = 1_000


def pool(size: int) -> int:
    """Players the rounds of ``size`` are drawn from."""
    return SMALL_POOL if size <= SMALL_MAX else 2 * size


def default_rounds(size: int) -> int:
    return ROUNDS.get(size, DEFAULT_ROUNDS)


def make_rounds(size: int, count: int, ladder: str, seed: int, ladders: int = LADDERS) -> list[RoundResult]:
    """``count`` rounds of ``size`` players; small ones round-robin over ladders ``{ladder}-0`` ..
    ``{ladder}-{ladders-1}`` (one ladder: ``ladder`` itself)."""
    if size > SMALL_MAX:
        return list(synthetic_rounds(n_players=pool(size), n_rounds=count, round_size=size, seed=seed, ladder=ladder))
    return [replace(r, ladder=ladder if ladders == 1 else f"{ladder}-{k % ladders}")
            for k, r in enumerate(match_rounds(n_players=pool(size), n_rounds=count, round_size=size, seed=seed))]


def ladder_names(rounds: list[RoundResult]) -> list[str]:
    """The ladders of ``rounds``, in order of first appearance."""
    return list(dict.fromkeys(r.ladder for r in rounds))
