"""The reference the bulk encoders (stream/contracts/encoding.py) are held to: ``json.dumps`` of the
message's JSON values (:func:`to_dict`), compact, ``ensure_ascii=False``, NaN and infinities refused;
and a PlayerUpdate's entries one by one (:func:`entries`)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

from stream.contracts.events import ROUND_CHANGE, DeadLetter, PlayerUpdate, RatingChange


def letter_from_json(raw: bytes | str) -> DeadLetter:
    """The DeadLetter of a dead letter's JSON."""
    data = json.loads(raw)
    data["original"] = base64.b64decode(data["original"], validate=True)
    return DeadLetter(**data)


def truncated(letter: DeadLetter) -> bool:
    """Whether the letter's ``original`` is only a prefix of the rejected message."""
    return len(letter.original) < (letter.original_length or 0)


def event_id(ladder: str, round_id: str, player: str, correction_id: str | None = None) -> str:
    """A rating change's id: ``ladder/round_id/player``, and ``/correction_id`` for a correction's."""
    base = f"{ladder}/{round_id}/{player}"
    return base if correction_id is None else f"{base}/{correction_id}"


def to_dict(message: Any) -> dict[str, Any]:
    """The message's JSON values. A RatingChange: a round's change has neither ``kind`` nor
    ``correction_id`` (as in v1), a change of a plain round (``weight`` None) neither ``team`` nor
    ``weight`` (as in v3), an event read from before v5 (``provisional`` None) no ``provisional``."""
    if isinstance(message, RatingChange):
        out = {"event_id": event_id(message.ladder, message.round_id, message.player, message.correction_id),
               **{name: getattr(message, name) for name in message.__slots__}}
        if message.kind == ROUND_CHANGE:
            del out["kind"], out["correction_id"]
        if message.weight is None:
            del out["team"], out["weight"]
        if message.provisional is None:
            del out["provisional"]
        return out
    if not isinstance(message, PlayerUpdate):
        return message.to_dict()  # type: ignore[no-any-return]
    u = message
    rows: list[dict[str, Any]] = [{"player": p, "rank": int(r), "performance": float(x)}
                                  for p, r, x in zip(u.players, u.ranks, u.performances)]
    if u.previous_seqs is not None:
        for entry, q in zip(rows, u.previous_seqs):
            entry["previous_seq"] = int(q)
    if u.mu_after is not None and u.sigma_after is not None:
        for entry, mu, sigma in zip(rows, u.mu_after, u.sigma_after):
            entry["mu_after"], entry["sigma_after"] = float(mu), float(sigma)
    if u.weights is not None:
        teams: list[str | None] = [None] * len(rows) if u.teams is None else u.teams
        for entry, t, w in zip(rows, teams, u.weights):
            if t is not None:
                entry["team"] = t
            entry["weight"] = float(w)
    return {"ladder": u.ladder, "round_id": u.round_id, "seq": u.seq, "occurred_at": u.occurred_at,
            "weight": u.weight, "field_size": u.field_size, "entries": rows}


def reference_json(message: Any) -> bytes:
    """What the message's JSON must be, byte for byte."""
    return json.dumps(to_dict(message), separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def entries(u: PlayerUpdate) -> Iterator[SimpleNamespace]:
    """Each entry of the update: player, rank, performance, previous_seq, team, weight (None where not said)."""
    n = len(u.players)
    previous: list[int | None] = [None] * n if u.previous_seqs is None else [*u.previous_seqs]
    teams: list[str | None] = [None] * n if u.teams is None else u.teams
    weights: list[float | None] = [None] * n if u.weights is None else [*u.weights]
    for p, r, x, q, t, w in zip(u.players, u.ranks, u.performances, previous, teams, weights):
        yield SimpleNamespace(player=p, rank=r, performance=x, previous_seq=q, team=t, weight=w)
