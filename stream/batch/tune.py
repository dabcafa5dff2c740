"""Hyper-parameter search on a user's own history (``stream tune``), scored as ``bin/hparam_search.rs``
scores systems (pair inversion of the experienced players) on the first part; the last ``holdout``
share is held out for the best and the defaults. Candidates: the defaults, ``budget - budget // 2``
seeded draws from :data:`SPACES`, ``budget // 2`` neighbours of the best (:func:`refinements`), at
three significant digits, scored in a process pool (ties go to the earlier: the defaults).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

import numpy as np

from stream.batch.metrics import Metrics
from stream.batch.models import replay_named
from stream.contracts import RoundResult
from stream.engine import PRESETS
from stream.engine.models import MODELS

Candidate = dict[str, float]
Sampler = Callable[[np.random.Generator], Candidate]

RHO_CHOICES = (0.0, 0.04, 0.2, 1.0, 5.0)
"""Elo-MMR's rho values tried (``hparam_search.rs`` also tries infinity, Elo-MMR(inf), which a
JSON ``LADDERS`` entry cannot carry; rho = 5 is close to memoryless)."""

REFINE_STEP = 0.25
"""Log-scale standard deviation of a refinement step (about +-25 %)."""


def _log(rng: np.random.Generator, lo: float, hi: float) -> float:
    """Log-uniform draw in [lo, hi] (``hparam_search.rs`` steps its grids in log space)."""
    return float(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _rho(rng: np.random.Generator) -> float:
    return float(RHO_CHOICES[int(rng.integers(len(RHO_CHOICES)))])


def _space(rho: bool = False, **ranges: tuple[float, float]) -> Sampler:
    """A sampler: each field log-uniform in its range, in order, then ``rho`` (if asked)."""
    def draw(rng: np.random.Generator) -> Candidate:
        out = {k: _log(rng, *bounds) for k, bounds in ranges.items()}
        return {**out, "rho": _rho(rng)} if rho else out
    return draw


def _topcoder(rng: np.random.Generator) -> Candidate:
    noob = _log(rng, 0.3, 0.9)
    return {"weight_noob": noob, "weight_limit": _log(rng, 0.1 * noob, noob)}


_ELO_MMR = {"weight_limit": (0.01, 2.0), "sig_limit": (20.0, 160.0)}
_BETA_DRIFT = _space(beta=(30.0, 600.0), sig_drift=(5.0, 80.0))
SPACES: dict[str, Sampler] = {
    **{name: _space(p.variant == "logistic", **_ELO_MMR) for name, p in PRESETS.items()},
    "glicko": _BETA_DRIFT,
    "bar": _BETA_DRIFT,
    "codeforces": _space(beta=(30.0, 600.0), weight=(0.05, 10.0)),
    "topcoder": _topcoder,
    "elo-multiplayer": _space(temperature=(40.0, 700.0), max_gain=(4.0, 128.0)),
}
"""Each tunable model's sampler: Elo-MMR presets vary weight_limit, sig_limit and (logistic) rho
and keep the rest of the preset (subsampling, history bound)."""


def round_sig(value: float, digits: int = 3) -> float:
    """``value`` to ``digits`` significant digits (config-friendly numbers)."""
    return 0.0 if value == 0 else float(f"{value:.{digits - 1}e}")


def candidates(name: str, budget: int, seed: int) -> list[Candidate]:
    """The defaults (the searched fields' default values), then ``budget`` draws."""
    rng = np.random.default_rng(seed)
    return [defaults(name), *({k: round_sig(v) for k, v in SPACES[name](rng).items()} for _ in range(budget))]


def refinements(name: str, around: Candidate, count: int, seed: int) -> list[Candidate]:
    """``count`` valid neighbours of ``around``: each positive value times exp(N(0, REFINE_STEP^2)),
    rho re-drawn with probability 1/4 (stage two of the search)."""
    rng = np.random.default_rng([seed, 1])
    base = _base(name)
    out: list[Candidate] = []
    for _ in range(count * 20):
        if len(out) == count:
            break
        step: Candidate = {}
        for key, value in around.items():
            if key == "rho":
                step[key] = _rho(rng) if rng.random() < 0.25 else value
            else:
                step[key] = round_sig(value * math.exp(rng.normal(0.0, REFINE_STEP))) if value > 0 else value
        try:
            dataclasses.replace(base, **step)  # the parameters' own validation
        except ValueError:
            continue
        out.append(step)
    return out


def _base(name: str) -> Any:
    """The named model's default parameters (an Elo-MMR preset's ``Params`` or a ``ModelParams``)."""
    return PRESETS[name] if name in PRESETS else MODELS[name].params


def defaults(name: str) -> Candidate:
    """The model's default values of the fields its space searches."""
    base = _base(name)
    fields = SPACES[name](np.random.default_rng(0)).keys()
    return {k: float(getattr(base, k)) for k in fields}


@dataclass(frozen=True, slots=True)
class Scored:
    """Metrics summary of one parameter set: pair/rank x all/experienced."""

    pair_all: float
    pair_exp: float
    rank_all: float
    rank_exp: float
    scored_rounds: int


def objective(rounds: Sequence[RoundResult], name: str, params: Candidate) -> float:
    """Pair inversion of the experienced players over ``rounds`` with ``params`` (NaN: nobody scored)."""
    return held_out(rounds, None, name, params).pair_exp


def held_out(rounds: Sequence[RoundResult], split: int | None, name: str, params: Candidate | None = None) -> Scored:
    """Replay every round with ``params``, scoring rounds ``split`` onwards only (None: the first 10 % not)."""
    metrics = Metrics(len(rounds), start=split)
    replay_named(rounds, name, overrides=params, metrics=metrics)
    s = metrics.summary()
    return Scored(float(s["pair_all"]), float(s["pair_exp"]), float(s["rank_all"]), float(s["rank_exp"]),
                  int(s["scored_rounds"]))


#: Held-out metrics and whether higher is better (pair: % of pairs ordered right; rank: rank deviation).
HIGHER_IS_BETTER = {"pair_all": True, "pair_exp": True, "rank_all": False, "rank_exp": False}


def compare_held_out(defaults: Scored, tuned: Scored) -> tuple[list[str], list[str]]:
    """(held-out metrics on which ``tuned`` is strictly better, those where ``defaults`` is; NaN: neither)."""
    better: list[str] = []
    worse: list[str] = []
    for name, higher in HIGHER_IS_BETTER.items():
        d, t = getattr(defaults, name), getattr(tuned, name)
        if math.isnan(d) or math.isnan(t) or d == t:
            continue
        (better if (t > d) == higher else worse).append(name)
    return better, worse


def split_index(n_rounds: int, holdout: float) -> int:
    """Index of the first held-out round: the last ``holdout`` share (at least one round each side)."""
    if not 0.0 < holdout < 1.0:
        raise ValueError("holdout must be in (0, 1)")
    split = n_rounds - round(n_rounds * holdout)
    if not 1 <= split < n_rounds:
        raise ValueError(f"{n_rounds} rounds cannot be split with holdout {holdout}: each part needs a round")
    return split


@dataclass(frozen=True, slots=True)
class TuneResult:
    """Every candidate's tuning objective (candidate 0 = defaults) and the chosen one."""

    model: str
    split: int
    candidates: list[Candidate]
    objectives: list[float]
    best: int

    @property
    def best_params(self) -> Candidate:
        return self.candidates[self.best]


_ROUNDS: Sequence[RoundResult] = ()
"""The tuning part, set once per pool worker by :func:`_share`."""


def _share(rounds: Sequence[RoundResult]) -> None:
    global _ROUNDS
    _ROUNDS = rounds


def _score(name: str, params: Candidate) -> float:
    return objective(_ROUNDS, name, params)


def tune(
    rounds: Sequence[RoundResult],
    name: str,
    *,
    budget: int = 32,
    holdout: float = 0.3,
    seed: int = 0,
    jobs: int | None = None,
    on_candidate: Callable[[], None] | None = None,
) -> TuneResult:
    """Search ``name``'s parameters (module docstring) in ``jobs`` processes (default: the cores; 1: here);
    ValueError when the split is impossible or the tuning part has no experienced player."""
    if name not in SPACES:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(SPACES)}")
    if budget < 0:
        raise ValueError("budget must be >= 0")
    split = split_index(len(rounds), holdout)
    part = list(rounds[:split])
    refine = budget // 2
    todo = candidates(name, budget - refine, seed)
    workers = min(len(todo), jobs if jobs is not None else (os.cpu_count() or 1))
    if workers < 1:
        raise ValueError("jobs must be >= 1")
    with ExitStack() as stack:
        pool = (stack.enter_context(ProcessPoolExecutor(max_workers=workers, initializer=_share, initargs=(part,)))
                if workers > 1 else None)
        scores = _score_all(pool, part, name, todo, on_candidate)
        if refine and not math.isnan(scores[0]):
            around = todo[_best(scores)]
            extra = refinements(name, around, refine, seed)
            todo += extra
            scores += _score_all(pool, part, name, extra, on_candidate)
    if math.isnan(scores[0]):
        raise ValueError("the tuning part has no player with >= 5 earlier rounds to score: "
                         "give a longer history or a smaller --holdout")
    return TuneResult(name, split, todo, scores, _best(scores))


def _best(scores: list[float]) -> int:
    """Index of the highest score (NaN lowest), the earlier one on ties."""
    return max(range(len(scores)), key=lambda i: (-math.inf if math.isnan(scores[i]) else scores[i], -i))


def _score_all(pool: ProcessPoolExecutor | None, part: Sequence[RoundResult], name: str, todo: list[Candidate],
               on_candidate: Callable[[], None] | None) -> list[float]:
    """The objective of every candidate, in order: in this process or on the pool."""
    scores = [math.nan] * len(todo)
    if pool is None:
        for i, params in enumerate(todo):
            scores[i] = objective(part, name, params)
            if on_candidate is not None:
                on_candidate()
        return scores
    futures = {pool.submit(_score, name, params): i for i, params in enumerate(todo)}
    for future in as_completed(futures):
        scores[futures[future]] = future.result()
        if on_candidate is not None:
            on_candidate()
    return scores
