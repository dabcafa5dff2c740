"""A simulated duel history for ``stream tune`` (issue 27: the duel preset is tuned on it).

Runs ``stream simulate``'s closed loop (the matchmaker over the engine's ratings, the QUEUES
defaults, the ladder's preset ``--preset``) and writes every duel it rated, in play order, as
rounds JSONL (``stream replay`` / ``stream tune`` input): the matches a duel queue makes, not
random pairs, so the tuner scores the ratings on the history they will rate.

Usage: python bench/duel_history.py OUT.jsonl [--seed 100] [--players 2000] [--games 30] [--preset mmr-bounded]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stream.contracts import RoundResult  # noqa: E402
from stream.engine.ladders import LadderConfig, parse_ladders  # noqa: E402
from stream.matchmaking.raters import EngineRater  # noqa: E402
from stream.matchmaking.simulate import SimConfig, default_queue, simulate  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=100)
    parser.add_argument("--players", type=int, default=2000)
    parser.add_argument("--games", type=int, default=30)
    parser.add_argument("--preset", default="mmr-bounded")
    args = parser.parse_args()
    rounds: list[RoundResult] = []

    class Recording(EngineRater):
        def rounds(self, winners: Sequence[int], losers: Sequence[int], now: float) -> list[RoundResult]:
            out = super().rounds(winners, losers, now)
            rounds.extend(out)
            return out

    def engine(ladder: LadderConfig, names: list[str], tag: str) -> EngineRater:
        return Recording(ladder, names, tag)

    queue = default_queue()
    ladder = parse_ladders(json.dumps({queue.ladder: {"model": args.preset}})).of(queue.ladder)
    sim = SimConfig(players=args.players, games=args.games, seed=args.seed)
    simulate(sim, ladder, queue, ("matchmaker",), engine=engine)
    with args.out.open("w") as f:
        for r in rounds:
            f.write(r.to_json() + "\n")
    print(f"{args.out}: {len(rounds)} duels of {args.players} players (seed {args.seed}, preset {args.preset})")


if __name__ == "__main__":
    main()
