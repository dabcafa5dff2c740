"""Compare models on one history, as the paper's Table 2: each model replays every round with
its default parameters while :class:`~stream.batch.metrics.Metrics` scores each round before its
update; the time covers the whole loop, metrics included (as the authors' ``bin/eval.rs``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from stream.batch.metrics import Metrics
from stream.batch.models import replay_named
from stream.contracts import RoundResult


class ModelFailed(ValueError):
    """A model's maths broke down on the history (e.g. TrueSkill on huge free-for-alls of newcomers)."""

    def __init__(self, model: str, error: ArithmeticError) -> None:
        super().__init__(f"model {model!r} cannot rate this history: {type(error).__name__}: {error}")
        self.model = model


@dataclass(frozen=True, slots=True)
class Evaluation:
    """One model's row of the table."""

    model: str
    pair_all: float
    pair_exp: float
    rank_all: float
    rank_exp: float
    seconds: float
    rounds_per_s: float
    rated: int
    scored_rounds: int
    participations_all: int
    participations_exp: int


def evaluate(
    rounds: Sequence[RoundResult],
    names: Sequence[str],
    *,
    on_round: Callable[[RoundResult], None] | None = None,
    start: int | None = None,
) -> list[Evaluation]:
    """One :class:`Evaluation` per model name; ``start``: the first scored round (None: after 10 %)."""
    rows = []
    for name in names:
        metrics = Metrics(len(rounds), start=start)
        started = time.perf_counter()
        try:
            result = replay_named(rounds, name, metrics=metrics, on_round=on_round)
        except ArithmeticError as exc:  # FloatingPointError, ZeroDivisionError, OverflowError
            raise ModelFailed(name, exc) from exc
        seconds = time.perf_counter() - started
        summary = metrics.summary()
        rows.append(Evaluation(
            model=name, pair_all=float(summary["pair_all"]), pair_exp=float(summary["pair_exp"]),
            rank_all=float(summary["rank_all"]), rank_exp=float(summary["rank_exp"]), seconds=seconds,
            rounds_per_s=len(rounds) / seconds if seconds > 0 else float("inf"),
            rated=len(rounds) - len(result.skipped), scored_rounds=int(summary["scored_rounds"]),
            participations_all=int(summary["participations_all"]),
            participations_exp=int(summary["participations_exp"]),
        ))
    return rows
