"""The events the service emits: ``PlayerUpdate`` (internal fan-out), ``RatingChange`` (public),
``DeadLetter`` (rejected input).  Each has ``to_json()`` / ``from_json()`` producing compact JSON
with a stable key order, valid against its schema in ``schemas/`` (checked by
:func:`stream.contracts.schemas.validate` in tests).  Floats are written with ``repr`` precision,
so a round trip is exact; NaN and infinities are refused (``ValueError``).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import orjson

from stream.contracts.encoding import (NULL, ChangeColumns, encode_changes_of_rounds, entry_texts, join_entries,
                                       json_number, update_head)
from stream.contracts.round import RoundRejected


def _dumps(obj: dict[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _loads(raw: bytes | str | dict[str, Any]) -> dict[str, Any]:
    return raw if isinstance(raw, dict) else json.loads(raw)


def event_id(ladder: str, round_id: str, player: str, correction_id: str | None = None) -> str:
    """The unique id of a rating change: ``ladder/round_id/player``, and ``/correction_id`` for
    the change a correction of round ``round_id`` made."""
    base = f"{ladder}/{round_id}/{player}"
    return base if correction_id is None else f"{base}/{correction_id}"


ROUND_CHANGE = "round"
CORRECTION_CHANGE = "correction"


@dataclass(slots=True)
class RatingChange:
    """One player's rating change (topic ``rating-changes``, key = player): in one round, or
    (``kind`` "correction") by a correction of round ``round_id`` (schema rating-change v2: then
    rank, field size and performance are those of his last round after it, None if none is left;
    schema v3: ``league``/``division``, and ``performance`` None for a model without one; v4:
    ``team``/``weight``; v5: ``provisional``)."""

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
    """The player's league and division after the change (schema v3; ``tier`` is their label:
    league "Gold", division 2 for tier "Gold 2"; division None for an undivided league; both None
    when unplaced)."""
    team: str | None = None
    """The player's team in a round with teams or partial play (None: an individual entry)."""
    weight: float | None = None
    """The share of the match the player played, in a round with teams or partial play (schema
    v4); None for a plain round's change, which then has neither ``team`` nor ``weight`` (as in v3)."""
    provisional: bool | None = None
    """Whether the player's rating is provisional right after the change, by the ladder's display
    rule (``engine.display.is_provisional`` of ``sigma_after`` and ``rounds_played``; schema v5,
    written last); None only for an event stored before v5, which then has no such key."""

    @property
    def event_id(self) -> str:
        return event_id(self.ladder, self.round_id, self.player, self.correction_id)

    def to_dict(self) -> dict[str, Any]:
        """The event's JSON values; a round's change has neither ``kind`` nor ``correction_id`` (as in v1),
        a change of a plain round (``weight`` None) neither ``team`` nor ``weight`` (as in v3), an
        event read from before v5 (``provisional`` None) no ``provisional``."""
        out = {"event_id": self.event_id, **{name: getattr(self, name) for name in self.__slots__}}
        if self.kind == ROUND_CHANGE:
            del out["kind"], out["correction_id"]
        if self.weight is None:
            del out["team"], out["weight"]
        if self.provisional is None:
            del out["provisional"]
        return out

    def to_json(self) -> str:
        """:meth:`to_dict` as compact JSON, by the bulk encoder (:mod:`stream.contracts.encoding`) with one row."""
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
    def from_json(cls, raw: bytes | str | dict[str, Any]) -> RatingChange:
        data = dict(_loads(raw))
        data.pop("event_id", None)
        return cls(**data)


@dataclass(slots=True)
class UpdateEntry:
    """One player of a :class:`PlayerUpdate`: rank in the round, phase one's performance and the
    seq of the round whose posterior was its prior (None where the message does not say); in a
    round with teams or partial play his team (None: an individual entry) and share of the match
    played (``weight``; None in a plain round: 1)."""

    player: str
    rank: int
    performance: float
    previous_seq: int | None = None
    team: str | None = None
    weight: float | None = None


_EXTENDED_ENTRY = frozenset(("mu_after", "sigma_after", "team", "weight"))
"""Entry fields of a rating-only model's or a team round's section (the usual section has none)."""


@dataclass(slots=True)
class PlayerUpdate:
    """Phase one's output for the round's players on one partition (topic ``player-updates``).

    Held as columns (``players``, ``ranks``, ``performances``, ``previous_seqs``, aligned) so
    phase two can work on arrays; serialised as ``entries: [{player, rank, performance,
    previous_seq}]``. ``previous_seqs`` is the ladder seq of each player's previous round whose
    posterior phase one used as the prior (0: none, the newcomer prior); phase two applies an
    entry only once the player's stored ``last_seq`` reached it (the chain rule). None when
    any entry lacks the field (a message of a phase one that did not write it).
    ``mu_after``/``sigma_after``: each player's new rating, computed by phase one for a ladder
    rated by a rating-only model (``stream.pipeline.rating_models``); None for Elo-MMR rounds.
    """

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
    """Each entry's share of the match played (schema v2), written for every entry of a round
    with teams or partial play (phase two weighs the update by it, ``stream.engine.teams``);
    None: a plain round, every weight 1 (v1 messages)."""

    def entries(self) -> Iterator[UpdateEntry]:
        n = len(self.players)
        previous: list[int | None] = [None] * n if self.previous_seqs is None else [*self.previous_seqs]
        teams: list[str | None] = [None] * n if self.teams is None else self.teams
        weights: list[float | None] = [None] * n if self.weights is None else [*self.weights]
        for p, r, x, q, t, w in zip(self.players, self.ranks, self.performances, previous, teams, weights):
            yield UpdateEntry(p, r, x, q, t, w)

    def to_dict(self) -> dict[str, Any]:
        entries: list[dict[str, Any]] = [
            {"player": p, "rank": int(r), "performance": float(x)}
            for p, r, x in zip(self.players, self.ranks, self.performances)
        ]
        if self.previous_seqs is not None:
            for entry, q in zip(entries, self.previous_seqs):
                entry["previous_seq"] = int(q)
        if self.mu_after is not None and self.sigma_after is not None:
            for entry, mu, sigma in zip(entries, self.mu_after, self.sigma_after):
                entry["mu_after"], entry["sigma_after"] = float(mu), float(sigma)
        if self.weights is not None:
            teams: list[str | None] = [None] * len(entries) if self.teams is None else self.teams
            for entry, t, w in zip(entries, teams, self.weights):
                if t is not None:
                    entry["team"] = t
                entry["weight"] = float(w)
        return {
            "ladder": self.ladder,
            "round_id": self.round_id,
            "seq": self.seq,
            "occurred_at": self.occurred_at,
            "weight": self.weight,
            "field_size": self.field_size,
            "entries": entries,
        }

    def to_json(self) -> str:
        """:meth:`to_dict` as compact JSON, by the bulk encoder (:mod:`stream.contracts.encoding`)."""
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
        """The update of a message (its text, or the parsed dict); raises (KeyError, TypeError,
        ValueError) on a malformed one. Text is parsed by orjson (several times faster than
        ``json.loads``, the same values for every document it accepts), and what orjson refuses
        (NaN, huge integers, lone surrogates, UTF-16...) by ``json.loads``, so a section parses, or
        fails, as the standard decoder decides. One pass over the entries for the usual section
        (an Elo-MMR round's: player, rank, performance, ``previous_seq``): phase two reads every
        section with it, a duel's one-entry sections by the thousand. The optional columns are
        None unless every entry has the field (``weights``: unless one has it, 1 where absent)."""
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


@dataclass(slots=True)
class DeadLetter:
    """A rejected input message (topic ``rounds-dlq``); ``original`` holds the raw bytes.

    Serialised, ``original`` is base64 and may be cut to a prefix so that the letter fits a
    size (:meth:`to_json`'s ``max_bytes``): ``original_length`` and ``original_sha256`` always
    describe the whole original, so a reader can tell a cut letter (prefix shorter than the
    length) and match it to its source."""

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

    @property
    def truncated(self) -> bool:
        """Whether ``original`` is only a prefix of the rejected message."""
        return len(self.original) < (self.original_length or 0)

    @classmethod
    def from_rejection(cls, exc: RoundRejected, original: bytes, *, rejected_at: float,
                       topic: str | None = None, partition: int | None = None,
                       offset: int | None = None) -> DeadLetter:
        return cls(exc.reason, exc.message, exc.field, original, rejected_at, topic, partition, offset)

    def to_dict(self, original: bytes | None = None) -> dict[str, Any]:
        """The letter as JSON values; ``original``: the bytes to write in place of the whole one (a prefix)."""
        return {
            "reason": self.reason,
            "message": self.message,
            "field": self.field,
            "original": base64.b64encode(self.original if original is None else original).decode("ascii"),
            "original_length": self.original_length,
            "original_sha256": self.original_sha256,
            "rejected_at": self.rejected_at,
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
        }

    def to_json(self, max_bytes: int | None = None) -> str:
        """Compact JSON; with ``max_bytes``, ``original`` is cut to the longest prefix that keeps
        the UTF-8 letter within ``max_bytes`` (an empty prefix if even the rest is too large)."""
        text = _dumps(self.to_dict())
        if max_bytes is None or len(text.encode()) <= max_bytes:
            return text
        rest = len(_dumps(self.to_dict(b"")).encode())
        keep = max(0, (max_bytes - rest) // 4 * 3)  # base64: 4 characters per 3 bytes
        return _dumps(self.to_dict(self.original[:keep]))

    @classmethod
    def from_json(cls, raw: bytes | str | dict[str, Any]) -> DeadLetter:
        data = dict(_loads(raw))
        data["original"] = base64.b64decode(data["original"], validate=True)
        return cls(**data)
