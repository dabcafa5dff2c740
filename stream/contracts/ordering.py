"""In which order a ladder's rounds are rated: ``published`` (the order the stream registers them, the
default) or ``occurred_at`` (ties in publish order), per ladder by ``LADDER_ORDER`` (:class:`LadderOrder`).
:func:`in_ladder_order` is the one sort of accepted rounds into rating order (replay, backfill and the
stream's re-rates); docs/history.md, "Late rounds", for how the stream inserts a late round.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

PUBLISHED = "published"
OCCURRED_AT = "occurred_at"
ORDERS = (PUBLISHED, OCCURRED_AT)
FALLBACK = "*"


@dataclass(frozen=True)
class LadderOrder:
    """The parsed ``LADDER_ORDER`` setting (ladder -> order; ``"*"``: the fallback)."""

    orders: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, raw: str) -> "LadderOrder":
        """Parse ``LADDER_ORDER``; raises ValueError naming what is wrong."""
        if not raw.strip():
            return cls()
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"LADDER_ORDER is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ValueError('LADDER_ORDER must be a JSON object ladder -> "published" | "occurred_at"')
        bad = {k: v for k, v in data.items() if v not in ORDERS}
        if bad:
            raise ValueError(f"LADDER_ORDER: unknown order(s) {bad!r}; known: {', '.join(ORDERS)}")
        return cls({str(k): str(v) for k, v in data.items()})

    def order_of(self, ladder: str) -> str:
        """The ladder's order: its entry, else the ``"*"`` entry, else ``published``."""
        return self.orders.get(ladder) or self.orders.get(FALLBACK) or PUBLISHED

    def by_time(self, ladder: str) -> bool:
        return self.order_of(ladder) == OCCURRED_AT


class _Timed(Protocol):
    @property
    def ladder(self) -> str: ...

    @property
    def occurred_at(self) -> float: ...


T = TypeVar("T", bound=_Timed)


def in_ladder_order(rounds: Sequence[T], by_time: Callable[[str], bool]) -> list[T]:
    """``rounds`` (in publish order) in rating order: each ``by_time`` ladder's rounds sorted (stably) by
    ``occurred_at`` in the places its rounds hold; other ladders' rounds untouched."""
    timed: dict[str, list[int]] = {}
    decided: dict[str, bool] = {}
    for i, r in enumerate(rounds):
        ladder = r.ladder
        if ladder not in decided:
            decided[ladder] = by_time(ladder)
        if decided[ladder]:
            timed.setdefault(ladder, []).append(i)
    if not timed:
        return list(rounds)
    out = list(rounds)
    for places in timed.values():
        ordered = sorted(places, key=lambda i: rounds[i].occurred_at)
        for place, i in zip(places, ordered):
            out[place] = rounds[i]
    return out
