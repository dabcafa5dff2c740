"""In which order a ladder's rounds are rated: ``published`` (the order the stream registers
them, the default) or ``occurred_at`` (by the round's ``occurred_at``, ties in publish order).

The ``LADDER_ORDER`` setting says it per ladder (a JSON object ladder -> order, ``"*"`` the
fallback; empty: every ladder ``published``); :func:`order_of` is the one place that reads it.
:func:`in_ladder_order` puts accepted rounds (first copies, in publish order) in the order they
are rated: ``stream replay``, ``stream backfill`` and the stream's re-rates (``stream.pipeline
.corrections``) all go through it, so a late round of an ``occurred_at`` ladder ends where the
replay puts it. On such a ladder the stream rates a round older than the ladder's newest one by
inserting it in its place and re-rating what follows (docs/corrections.md, "Late rounds").
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


def order_of(ladder: str, raw: str) -> str:
    """The order of ``ladder`` under the ``LADDER_ORDER`` text ``raw`` (see :class:`LadderOrder`)."""
    return LadderOrder.parse(raw).order_of(ladder)


class _Timed(Protocol):
    @property
    def ladder(self) -> str: ...

    @property
    def occurred_at(self) -> float: ...


T = TypeVar("T", bound=_Timed)


def in_ladder_order(rounds: Sequence[T], by_time: Callable[[str], bool]) -> list[T]:
    """``rounds`` (in publish order) in rating order: the rounds of each ladder for which
    ``by_time(ladder)`` is true sorted by ``occurred_at`` (stable: ties keep publish order), in
    the places that ladder's rounds hold; other ladders' rounds untouched. Ladders are
    independent pools, so only each ladder's own order matters."""
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
