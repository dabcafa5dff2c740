"""Rating health in Redis: each ladder's scored rounds, cumulative and over the last N rounds.

Keys (``keys.health`` / ``keys.health_window`` / ``keys.climbers``, all in the ladder's slot):

* ``ems:health:{L}`` (hash): ``last_seq``, the last scored round; per field F of :data:`FIELDS`
  ``c:F`` (sum over every scored round) and ``r:F`` (sum over the rounds in the window);
* ``ems:health_window:{L}`` (list, newest first): the scored rounds in entries of one batch's rounds
  each, ``first seq,last seq,<the FIELDS values summed>,median of their median mu``; the oldest
  entries dropped while the others hold HEALTH_WINDOW rounds (so the rolling figures cover the last
  HEALTH_WINDOW rounds and at most one batch more);
* ``ems:climbers:{L}`` (list, newest first, at most :data:`CLIMBERS_KEPT`): rapid-climber events
  (JSON: ladder, player, round_id, seq, streak, z, performance, mu_before, rounds_before, gain).

``record_health.lua`` adds a ladder's entries in seq order, skipping those at or below
``last_seq``, and keeps the window's sums by subtracting the entries it drops. The figures
(:func:`ladder_health`) are ratios of these sums; the pipeline scores (stream/pipeline/health.py).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from stream.store import keys
from stream.store.client import AsyncRedis, as_text
from stream.store.scripts import source

BINS = 10
"""Calibration bins of the favourite's predicted probability: [0.5, 0.55), ..., [0.95, 1]."""
FIELDS: tuple[str, ...] = (
    "scored", "pair_all_vw", "pair_all_w", "pair_exp_vw", "pair_exp_w", "rank_all_vw", "rank_all_w",
    "rank_exp_vw", "rank_exp_w", "pairs", "log_loss", "participations", "mu_sum", "provisional", "climbers",
    "pool_mu_delta", "pool_new",
    *(f"cal{b}_pairs" for b in range(BINS)), *(f"cal{b}_wins" for b in range(BINS)),
    *(f"cal{b}_expected" for b in range(BINS)))
"""What each scored round adds (``_vw``: value x weight, as ``batch.metrics.WeightedMean``)."""
CLIMBERS_KEPT = 1000


@dataclass(frozen=True)
class ScoredRounds:
    """A ladder's rounds scored in one engine call: their seqs (ascending), the :data:`FIELDS` values
    of each (rows aligned), each round's participants' median mu before it."""

    seqs: np.ndarray
    table: np.ndarray
    medians: np.ndarray

    def chunks(self, whole: bool) -> list[tuple[int, int, str]]:
        """(first seq, last seq, entry text): the sum of every round (``whole``), or one per round."""
        def entry(values: np.ndarray, median: float) -> str:
            return ",".join(map(repr, values.tolist())) + "," + repr(median)

        if whole:
            return [(int(self.seqs[0]), int(self.seqs[-1]), entry(self.table.sum(axis=0), float(np.median(self.medians))))]
        return [(int(q), int(q), entry(row, float(m))) for q, row, m in zip(self.seqs, self.table, self.medians)]


@dataclass(frozen=True)
class Climber:
    """A rapid-climber event: ``player`` performed ``z`` sd above their mu ``streak`` rounds in a row."""

    ladder: str
    player: str
    round_id: str
    seq: int
    streak: int
    z: float
    performance: float
    mu_before: float
    rounds_before: int
    round_index: int  # in the scored call (not stored)
    gain: float = 0.0
    """performance - the mu the streak began at."""

    def to_dict(self) -> dict[str, Any]:
        return {"ladder": self.ladder, "player": self.player, "round_id": self.round_id, "seq": self.seq,
                "streak": self.streak, "z": self.z, "performance": self.performance, "mu_before": self.mu_before,
                "rounds_before": self.rounds_before, "gain": self.gain}


class HealthStore:
    """Records scored rounds (``record_health.lua``, one call per ladder, run concurrently)."""

    def __init__(self, client: AsyncRedis) -> None:
        self.client = client
        self._script = client.register_script(source("record_health"))

    async def record(self, ladders: Sequence[tuple[str, ScoredRounds, Sequence[Climber]]], window: int) -> list[int]:
        """Add each ladder's scored rounds: one entry summing them (``record_health.lua``; one call
        per ladder, run concurrently), or, when the ladder's last scored round falls inside them
        (a batch cut differently after a redelivery), one entry per round. Returns per ladder the
        entries recorded (0: already were)."""
        import asyncio

        async def one(ladder: str, scored: ScoredRounds, climbers: Sequence[Climber]) -> int:
            keys_ = [keys.health(ladder), keys.health_window(ladder), keys.climbers(ladder)]
            events = [f"{c.seq}|{json.dumps(c.to_dict())}" for c in climbers]
            for whole in (True, False):
                chunks = scored.chunks(whole)
                args: list[Any] = [window, CLIMBERS_KEPT, len(FIELDS), *FIELDS, len(chunks)]
                for first, last, entry in chunks:
                    args += [first, last, entry]
                args += [len(events), *events]
                recorded = int(await self._script(keys=keys_, args=args))
                if recorded >= 0:
                    return recorded
            raise AssertionError("record_health.lua refused rounds one by one")  # a round is never split

        return list(await asyncio.gather(*(one(*item) for item in ladders)))


def _ratio(sums: dict[str, float], prefix: str, top: str, bottom: str, scale: float = 1.0) -> float | None:
    weight = sums.get(prefix + bottom, 0.0)
    return sums.get(prefix + top, 0.0) / weight * scale if weight > 0 else None


def figures(sums: dict[str, float], prefix: str) -> dict[str, Any]:
    """The figures of one set of sums (``c:`` cumulative or ``r:`` rolling)."""
    out: dict[str, Any] = {"rounds": int(sums.get(prefix + "scored", 0.0))}
    for name in ("pair_all", "pair_exp", "rank_all", "rank_exp"):
        out[name] = _ratio(sums, prefix, name + "_vw", name + "_w")  # percent, as stream evaluate
        out[name + "_weight"] = int(sums.get(prefix + name + "_w", 0.0))
    pairs = sums.get(prefix + "pairs", 0.0)
    out["pairs"] = int(pairs)
    out["log_loss"] = _ratio(sums, prefix, "log_loss", "pairs")
    out["mean_mu"] = _ratio(sums, prefix, "mu_sum", "participations")
    out["provisional_share"] = _ratio(sums, prefix, "provisional", "participations")
    out["climbers"] = int(sums.get(prefix + "climbers", 0.0))
    bins = []
    for b in range(BINS):
        n = sums.get(f"{prefix}cal{b}_pairs", 0.0)
        bins.append({"from": 0.5 + b / (2 * BINS), "to": 0.5 + (b + 1) / (2 * BINS), "pairs": int(n),
                     "wins": sums.get(f"{prefix}cal{b}_wins", 0.0), "predicted": sums.get(f"{prefix}cal{b}_expected", 0.0)})
    out["calibration"] = bins
    out["calibration_error"] = (sum(abs(x["wins"] - x["predicted"]) for x in bins) / pairs) if pairs > 0 else None
    return out


async def ladder_health(client: AsyncRedis, ladder: str, *, climbers: int = 20) -> dict[str, Any] | None:
    """A ladder's rating health (None: nothing scored): cumulative and rolling figures, the pool's
    mean mu, the window's median mu, the last ``climbers`` rapid-climber events."""
    pipe = client.pipeline(transaction=False)
    pipe.hgetall(keys.health(ladder))
    pipe.lrange(keys.health_window(ladder), 0, -1)
    pipe.lrange(keys.climbers(ladder), 0, max(0, climbers - 1))
    raw, window, events = await pipe.execute()
    if not raw:
        return None
    sums = {as_text(k): float(v) for k, v in raw.items() if as_text(k) != "last_seq"}
    medians = [float(as_text(e).rsplit(",", 1)[1]) for e in window]  # one per entry (a batch's rounds)
    pool_players = sums.get("c:pool_new", 0.0)
    return {
        "ladder": ladder,
        "last_seq": int(raw.get(b"last_seq", raw.get("last_seq", -1))),
        "window": int(sums.get("r:scored", 0.0)),
        "cumulative": figures(sums, "c:"),
        "rolling": figures(sums, "r:"),
        "pool": {"players": int(pool_players),
                 "mean_mu": sums.get("c:pool_mu_delta", 0.0) / pool_players if pool_players > 0 else None},
        "median_mu": statistics.median(medians) if medians else None,
        "climbers": [json.loads(as_text(e)) for e in events],
    }


def finite(value: float | None) -> float:
    """A figure for a gauge: None becomes NaN."""
    return math.nan if value is None else float(value)
