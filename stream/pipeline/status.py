"""A stored rating as players see it at read time: its interval, provisional status, leaderboard
eligibility, and the uncertainty of an inactive player grown by the drift the next round would
apply (``engine.diffusion.sigma_at``, Elo-MMR ladders; a rating-only model's sigma as stored).
Nothing is written: the stored state changes only when the player plays again.

The rules are the ladder's display entry (``LADDERS``: ``interval_z``, ``provisional_sigma``,
``provisional_rounds``, ``min_rounds``, ``active_days``, ``max_sigma``; ``engine.display.standing``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from stream.engine.diffusion import sigma_at
from stream.engine.display import standing
from stream.engine.ladders import LadderConfig

DAY_S = 86_400.0


def status_fields(cfg: LadderConfig, mu: Sequence[float | None], sigma: Sequence[float | None],
                  rounds: Sequence[int | None], last_time: Sequence[float | None], now: float) -> list[dict[str, Any]]:
    """Per player: ``sigma_now``, ``interval`` [mu - z*sigma_now, mu + z*sigma_now], ``interval_z``,
    ``provisional``, ``eligible`` and ``ineligible_reasons`` (empty dicts' fields null where the
    player has no rating)."""
    n = len(mu)
    if n == 0:
        return []
    mu_a = np.array([math.nan if m is None else m for m in mu], dtype=float)
    sig = np.array([math.nan if s is None else s for s in sigma], dtype=float)
    last = np.array([math.nan if t is None else t for t in last_time], dtype=float)
    played = np.array([0 if k is None else k for k in rounds], dtype=np.int64)
    sig_now = sig if cfg.rating_model is not None else sigma_at(sig, last, now, cfg.elo_mmr)
    idle = (now - last) / DAY_S
    shown = standing(mu_a, sig_now, played, idle, cfg.display)
    out: list[dict[str, Any]] = []
    for i in range(n):
        if math.isnan(mu_a[i]) or math.isnan(sig[i]):
            out.append({"sigma_now": None, "interval": None, "interval_z": cfg.display.interval_z,
                        "provisional": None, "eligible": None, "ineligible_reasons": []})
            continue
        out.append({"sigma_now": float(sig_now[i]), "interval": [float(shown.low[i]), float(shown.high[i])],
                    "interval_z": cfg.display.interval_z, "provisional": bool(shown.provisional[i]),
                    "eligible": bool(shown.eligible[i]), "ineligible_reasons": shown.reasons[i]})
    return out


def add_intervals(items: list[dict[str, Any]], z: float, *, mu: str = "mu_after", sigma: str = "sigma_after") -> None:
    """Give each rating of ``items`` (stored RatingChange dicts by default: the player's history, a
    round's results) its ``interval`` [mu - z*sigma, mu + z*sigma] and ``interval_z``, in place:
    the interval as of that rating (no drift: the change is when it was written). An item without
    both numbers gets ``interval`` null."""
    if not items:
        return
    m = np.array([_number(i.get(mu)) for i in items], dtype=float)
    s = np.array([_number(i.get(sigma)) for i in items], dtype=float)
    low, high = (m - z * s).tolist(), (m + z * s).tolist()
    for item, lo, hi in zip(items, low, high):
        item["interval"] = None if math.isnan(lo) or math.isnan(hi) else [lo, hi]
        item["interval_z"] = z


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
