"""The events the service emits: ``PlayerUpdate`` (internal fan-out), ``RatingChange`` (public),
``DeadLetter`` (rejected input); ``to_json()``: compact JSON valid against its schema, floats at ``repr``
precision (exact round trips: ``from_json``), NaN and infinities refused (``ValueError``).
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from typing import Any, cast

import orjson

from stream.contracts.encoding import (NULL, ChangeColumns, encode_changes_of_rounds, entry_texts, join_entries,
                                       json_number, update_head)
from stream.contracts.round import RoundRejected


def _dumps(obj: dict[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


ROUND_CHANGE = "round"
CORRECTION_CHANGE = "correction"


@dataclass(slots=True)
class RatingChange:
    """One player's rating change (topic ``rating-changes``, key = player) in a round, or by a correction
    of it (``kind`` "correction": rank, field size and performance of his last round after it, None if none)."""

    ladder: str
    round_id: str
    player: str
    rank: int | None
    field_size: int | None
    performance: float | None
    mu_before: float
    sigma_before: float
    mu_after: float
    sigma_after: float
    display_rating: float
    tier: str | None
    rounds_played: int
    occurred_at: float
    kind: str = ROUND_CHANGE
    correction_id: str | None = None
    league: str | None = None
    division: int | None = None
    """After the change (v3): ``tier`` "Gold 2" is league "Gold", division 2; None when unplaced or undivided."""
    team: str | None = None
    """The player's team in a round with teams or partial play (None: an individual entry)."""
    weight: float | None = None
    """The share of the match played (v4); None for a plain round's change, written without ``team`` and ``weight``."""
    provisional: bool | None = None
    """``engine.display.is_provisional`` after the change (v5, written last); None: an event from before v5."""

    def to_json(self) -> str:
        """Compact JSON, by the bulk encoder (:mod:`stream.contracts.encoding`) with one row."""
        if self.kind not in (ROUND_CHANGE, CORRECTION_CHANGE) or (self.kind == CORRECTION_CHANGE) != (
                self.correction_id is not None):
            raise ValueError(f"a {self.kind!r} change with correction id {self.correction_id!r}")
        n = json_number
        weights = None if self.weight is None else [n(self.weight)]
        placement = (self.league, self.division)
        columns = ChangeColumns(
            ladder=self.ladder, round_id=self.round_id, field_size=0, occurred_at=0.0, players=[self.player], ranks=[],
            ranks_text=[NULL if self.rank is None else n(self.rank)],
            performance=[NULL if self.performance is None else n(self.performance)], mu_before=[n(self.mu_before)],
            sigma_before=[n(self.sigma_before)], mu_after=[n(self.mu_after)], sigma_after=[n(self.sigma_after)],
            display_rating=[n(self.display_rating)], tiers=[self.tier or ""], rounds_played=[self.rounds_played],
            teams=None if weights is None else [self.team], weights=weights, placement=lambda _: placement,
            corrections=None if self.correction_id is None else [self.correction_id],
            provisional=None if self.provisional is None else [self.provisional])
        return encode_changes_of_rounds(self.ladder, [self.round_id], [self.field_size], [self.occurred_at], [0],
                                        columns)[0].decode()

    @classmethod
    def from_json(cls, raw: bytes | str) -> RatingChange:
        data = json.loads(raw)
        data.pop("event_id", None)
        return cls(**data)


_EXTENDED_ENTRY = frozenset(("mu_after", "sigma_after", "team", "weight"))
"""Entry fields of a rating-only model's or a team round's section (the usual section has none)."""


@dataclass(slots=True)
class PlayerUpdate:
    """Phase one's output for a round's players on one partition (``player-updates``), as aligned columns.
    ``previous_seqs``: each player's prior's round (0: newcomer; phase two's chain rule waits for it);
    ``mu_after``/``sigma_after``: a rating-only model's new ratings."""

    ladder: str
    round_id: str
    seq: int
    occurred_at: float
    weight: float
    field_size: int
    players: list[str]
    ranks: list[int]
    performances: list[float]
    previous_seqs: list[int] | None = None
    mu_after: list[float] | None = None
    sigma_after: list[float] | None = None
    teams: list[str | None] | None = None
    """Each entry's team (schema v2; None for an individual entry); None: no entry names one."""
    weights: list[float] | None = None
    """Each entry's share of the match played (v2), in a round with teams or partial play; None: every weight 1."""

    def to_json(self) -> str:
        """Compact JSON, by the bulk encoder (:mod:`stream.contracts.encoding`)."""
        def texts(values: list[float]) -> list[str]:
            return [json_number(float(v)) for v in values]

        ratings = None if self.mu_after is None or self.sigma_after is None else (
            texts(self.mu_after), texts(self.sigma_after))
        head = update_head(self.ladder, self.round_id, self.seq, self.occurred_at, self.weight, self.field_size)
        return join_entries(head, entry_texts(self.players, self.ranks, texts(self.performances), self.previous_seqs,
                                              ratings, self.teams,
                                              None if self.weights is None else texts(self.weights))).decode()

    @classmethod
    def from_json(cls, raw: bytes | str | dict[str, Any]) -> PlayerUpdate:
        """The update of a message (KeyError, TypeError, ValueError if malformed), in one pass over the usual
        entries; an optional column is None unless every entry has it (``weights``: unless one has it, 1
        where absent). Read by orjson (several times faster), by ``json.loads`` what orjson refuses."""
        if isinstance(raw, dict):
            data = raw
        else:
            try:
                data = orjson.loads(raw)
            except orjson.JSONDecodeError:
                data = json.loads(raw)
        entries = data["entries"]
        players: list[str] = []
        ranks: list[int] = []
        performances: list[float] = []
        previous: list[int | None] = []
        extended = False
        for entry in entries:
            players.append(entry["player"])
            ranks.append(entry["rank"])
            performances.append(entry["performance"])
            previous.append(entry.get("previous_seq"))
            extended = extended or not _EXTENDED_ENTRY.isdisjoint(entry)
        mu_after = sigma_after = weights = None
        teams = None
        if extended or not players:  # a rating-only model's round, a round with teams or partial play
            mu = [e.get("mu_after") for e in entries]
            sigma = [e.get("sigma_after") for e in entries]
            shares = [e.get("weight") for e in entries]
            names = [e.get("team") for e in entries]
            mu_after = None if None in mu else mu
            sigma_after = None if None in sigma else sigma
            teams = None if all(t is None for t in names) else names
            weights = None if all(w is None for w in shares) else [1.0 if w is None else w for w in shares]
        return cls(data["ladder"], data["round_id"], data["seq"], data["occurred_at"], data["weight"],
                   data["field_size"], players, ranks, performances,
                   None if None in previous else cast("list[int]", previous), mu_after, sigma_after, teams, weights)


LETTER_KEYS = ("reason", "message", "field", "original", "original_length", "original_sha256", "rejected_at",
               "topic", "partition", "offset")
"""A dead letter's JSON members, in the order they are written."""


@dataclass(slots=True)
class DeadLetter:
    """A rejected input message (``rounds-dlq``): ``original``, written as base64 and maybe cut to a prefix
    (:meth:`to_json`), and ``original_length`` / ``original_sha256`` of the whole original."""

    reason: str
    message: str
    field: str | None
    original: bytes
    rejected_at: float
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    original_length: int | None = None
    original_sha256: str | None = None

    def __post_init__(self) -> None:
        if self.original_length is None:
            self.original_length = len(self.original)
        if self.original_sha256 is None:
            self.original_sha256 = hashlib.sha256(self.original).hexdigest()

    @classmethod
    def from_rejection(cls, exc: RoundRejected, original: bytes, *, rejected_at: float,
                       topic: str | None = None, partition: int | None = None,
                       offset: int | None = None) -> DeadLetter:
        return cls(exc.reason, exc.message, exc.field, original, rejected_at, topic, partition, offset)

    def to_dict(self, original: bytes | None = None) -> dict[str, Any]:
        """The letter as JSON values, in :data:`LETTER_KEYS` order; ``original``: the bytes to write in place of
        the whole one (a prefix)."""
        text = base64.b64encode(self.original if original is None else original).decode("ascii")
        return {k: text if k == "original" else getattr(self, k) for k in LETTER_KEYS}

    def to_json(self, max_bytes: int | None = None) -> str:
        """Compact JSON; with ``max_bytes``, ``original`` is cut to the longest prefix that keeps
        the UTF-8 letter within ``max_bytes`` (an empty prefix if even the rest is too large)."""
        text = _dumps(self.to_dict())
        if max_bytes is None or len(text.encode()) <= max_bytes:
            return text
        rest = len(_dumps(self.to_dict(b"")).encode())
        keep = max(0, (max_bytes - rest) // 4 * 3)  # base64: 4 characters per 3 bytes
        return _dumps(self.to_dict(self.original[:keep]))
