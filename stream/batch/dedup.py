"""The stream's registration rule (register_round.lua) in process, for ``stream replay`` ("Redis
equals replay"): each (ladder, round_id) once, a re-published round with the same content a no-op,
with different content a ``conflict`` (the first stands); then each ladder's rating order
(``contracts.ordering.in_ladder_order``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from stream.contracts import RoundRejected, RoundResult
from stream.contracts.ordering import in_ladder_order
from stream.contracts.round import conflict


@dataclass
class Deduplicated:
    """The rounds to rate (first copies, in order), and what was left out."""

    rounds: list[RoundResult] = field(default_factory=list)
    """First copies, in rating order (publish order, or ``occurred_at`` order where ``by_time``)."""
    duplicates: list[tuple[int, RoundResult]] = field(default_factory=list)
    """(input position, round): re-published with the same content, a no-op."""
    conflicts: list[tuple[int, RoundRejected]] = field(default_factory=list)
    """(input position, ``conflict`` rejection): an id re-used with different content."""


def first_copies(rounds: Iterable[RoundResult], by_time: Callable[[str], bool] | None = None) -> Deduplicated:
    """Each (ladder, round_id) once, as the stream registers it; ``by_time(ladder)``: by occurred_at."""
    out = Deduplicated()
    seen: dict[tuple[str, str], tuple[str, int]] = {}
    seqs: dict[str, int] = {}
    for position, round_ in enumerate(rounds):
        key = (round_.ladder, round_.round_id)
        first = seen.get(key)
        if first is None:
            seqs[round_.ladder] = seqs.get(round_.ladder, 0) + 1
            seen[key] = (round_.content_hash(), seqs[round_.ladder])
            out.rounds.append(round_)
        elif first[0] == round_.content_hash():
            out.duplicates.append((position, round_))
        else:
            out.conflicts.append((position, conflict(round_, first[1])))
    if by_time is not None:
        out.rounds = in_ladder_order(out.rounds, by_time)
    return out
