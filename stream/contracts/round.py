"""``RoundResult``: one ranked round of one ladder, and :func:`parse_round`, its validator.

Input (topic ``rounds``, schema ``schemas/round-result.v2.json``; v1 rounds are valid v2 rounds)::

    {"round_id": "r-17", "ladder": "blitz", "occurred_at": "2024-05-01T12:00:00Z",
     "standings": [{"player": "ann", "rank": 1}, {"player": "bob", "rank": 2}],
     "weight": 1.0, "perf_ceiling": null}

Standings are explicit ``{player, rank}`` objects (ranks 1-based, equal ranks tie; only their
order matters) or finishing order, one entry per place: a player id, or an array of tied ids
(competition ranking: k players tied at rank r are followed by rank r + k).  Both forms cannot
be mixed in one round.  An explicit entry may instead be a team
``{"team": T, "players": [P, {"player": P, "weight": w}, ...], "rank": r}``; ``weight`` in (0, 1]
(default 1) is the share of the match a player played (partial play), and an individual entry may
carry one too.  Every player becomes one :class:`Standing` with his entry's rank and, in a team,
the team's name.  Whether a model can rate teams, rounds mixing teams and individuals, or partial
play is checked by :func:`check_supported` with the rater's :class:`Support`.  ``occurred_at`` is an RFC 3339 date-time with offset, or epoch seconds.

Every rejection is a :class:`RoundRejected` with a machine ``reason`` (see :data:`REASONS`), a
human ``message`` and the offending ``field`` written as a path, e.g. ``standings[3].rank``.
A round with fewer than two entries (players, or teams) is "outcome free" (reason ``no_outcome``):
it is valid, recorded, and rates nobody; the parsed round is on ``.round``.  A round in which two
entries or more all tie is a draw: it parses, and is rated or recorded ``no_outcome`` as its
ladder's model says (:meth:`RoundResult.is_outcome_free` with the model's ``draws_rate``).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from stream.contracts.schemas import ROUND_RESULT, SchemaError, validator
from stream.settings import Settings

NOT_UTF8 = "not_utf8"
NOT_JSON = "not_json"
SCHEMA = "schema"
UNKNOWN_FIELD = "unknown_field"
NO_OUTCOME = "no_outcome"
DUPLICATE_PLAYER = "duplicate_player"
BAD_RANK = "bad_rank"
BAD_WEIGHT = "bad_weight"
ID_TOO_LONG = "id_too_long"
ROUND_TOO_LARGE = "round_too_large"
MESSAGE_TOO_LARGE = "message_too_large"
BAD_LADDER = "bad_ladder"
BAD_NUMBER = "bad_number"
CONFLICT = "conflict"
MODEL_CHANGED = "model_changed"
EMPTY_TEAM = "empty_team"
DUPLICATE_TEAM = "duplicate_team"
BAD_PLAYER_WEIGHT = "bad_player_weight"
MIXED_STANDINGS = "mixed_standings"
TEAMS_UNSUPPORTED = "teams_unsupported"
BAD_PLAYER_UPDATE = "bad_player_update"
UNVERIFIED_PLAYER_UPDATE = "unverified_player_update"
INTERNAL_ERROR = "internal_error"
BAD_CORRECTION = "bad_correction"
UNKNOWN_ROUND = "unknown_round"
NOT_CORRECTABLE = "not_correctable"
HISTORY_TRIMMED = "history_trimmed"
CORRECTION_REASONS = (BAD_CORRECTION, UNKNOWN_ROUND, NOT_CORRECTABLE, HISTORY_TRIMMED)
"""The reason codes of a rejected correction (topic ``corrections``, ``stream.contracts.correction``)
besides the round reasons of an amended round and ``conflict``: ``bad_correction`` (not a
correction: schema, an amended round of another id or ladder), ``unknown_round`` (the ladder has
no such round), ``not_correctable`` (the round is not rated or outcome-free, e.g. ``failed``, or an
amend of a voided round), ``history_trimmed`` (a stored fan-out the re-rate needs was dropped by
retention: docs/history.md, "How far back corrections reach")."""
ROUND_REASONS = (
    NOT_UTF8, NOT_JSON, SCHEMA, UNKNOWN_FIELD, NO_OUTCOME, DUPLICATE_PLAYER, BAD_RANK,
    BAD_WEIGHT, ID_TOO_LONG, ROUND_TOO_LARGE, MESSAGE_TOO_LARGE, BAD_LADDER, BAD_NUMBER, CONFLICT,
    EMPTY_TEAM, DUPLICATE_TEAM, BAD_PLAYER_WEIGHT, MIXED_STANDINGS, TEAMS_UNSUPPORTED, MODEL_CHANGED,
)
"""The reason codes of a rejected round.  ``conflict`` (a round_id reused with different
content) is detected against the rounds already accepted (Redis in the stream, the replay's
ledger in ``stream replay``), not by :func:`parse_round`; ``teams_unsupported`` (teams or
partial play for a rater that cannot rate them) and ``mixed_standings`` (teams and individuals
in one round for a rater that rates teams but not that) by :func:`check_supported`;
``model_changed`` (the ladder's configured model is not the one it has rated with: changing it
is a re-rate) by the stream's registration (:func:`model_changed`)."""
BAD_TICKET = "bad_ticket"
UNKNOWN_QUEUE = "unknown_queue"
BAD_PARTY = "bad_party"
TICKET_REASONS = (BAD_TICKET, UNKNOWN_QUEUE, BAD_PARTY)
"""The reason codes of a rejected ``match-tickets`` message (``stream.contracts.tickets``) besides
not_utf8, not_json, message_too_large, id_too_long and internal_error: ``bad_ticket`` (not a join
nor a cancel: schema), ``unknown_queue`` (no such queue in QUEUES), ``bad_party`` (more players
than the queue's team_size, or a player twice)."""
REASONS = (*ROUND_REASONS, BAD_PLAYER_UPDATE, UNVERIFIED_PLAYER_UPDATE, INTERNAL_ERROR, *CORRECTION_REASONS,
           *TICKET_REASONS)
"""Every machine reason code of a dead letter: the round reasons, ``bad_player_update`` (a
``player-updates`` message that is not a PlayerUpdate), ``unverified_player_update`` (one that is
not exactly a message of its round's stored fan-out) and ``internal_error`` (a message whose
handling kept raising an unexpected exception, named in the letter's message, HANDLER_ATTEMPTS
times: it is set aside so the stream moves on), the :data:`CORRECTION_REASONS` and the :data:`TICKET_REASONS`."""

MIN_TIME = -62_135_596_800.0
MAX_TIME = 253_402_300_799.0
"""``occurred_at`` bounds in epoch seconds: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z, what an
RFC 3339 date-time can express (a number outside is ``bad_number``)."""

DEFAULT_LADDER = "default"
LADDER_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
"""Ladder names: 1-64 characters, letters/digits first, then letters, digits, ``_ . : -``
(safe inside Redis keys, topic keys and URLs)."""

RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)

TOP_LEVEL_FIELDS = frozenset({"round_id", "ladder", "occurred_at", "standings", "weight", "perf_ceiling"})
STANDING_FIELDS = frozenset({"player", "rank", "weight"})
TEAM_FIELDS = frozenset({"team", "players", "rank"})
MEMBER_FIELDS = frozenset({"player", "weight"})


class RoundRejected(ValueError):
    """A round that cannot be rated: ``reason`` (one of :data:`REASONS`), ``message``, ``field``.

    For ``no_outcome`` the parsed, valid round is available as ``round``.
    """

    def __init__(self, reason: str, message: str, field: str | None = None,
                 round: RoundResult | None = None) -> None:
        super().__init__(f"{reason}: {message}" + (f" (field {field})" if field else ""))
        self.reason = reason
        self.message = message
        self.field = field
        self.round = round


@dataclass(frozen=True)
class Limits:
    """Bounds on accepted input; build from the service's :class:`Settings`."""

    max_round_size: int = Settings.max_round_size
    max_message_bytes: int = Settings.max_message_bytes
    max_id_length: int = Settings.max_id_length
    strict: bool = Settings.strict_schema
    min_weight: float = Settings.min_weight
    max_weight: float = Settings.max_weight

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        return cls(
            max_round_size=settings.max_round_size,
            max_message_bytes=settings.max_message_bytes,
            max_id_length=settings.max_id_length,
            strict=settings.strict_schema,
            min_weight=settings.min_weight,
            max_weight=settings.max_weight,
        )


STORED = Limits(max_round_size=2**62, max_message_bytes=2**62, max_id_length=2**62, strict=False,
                min_weight=0.0, max_weight=math.inf)
"""Limits for re-reading a round the service already accepted (its stored body): only the
contract's fixed rules apply, not the configurable limits, which may have been tightened since
(a round accepted before must still be completed, never stall)."""


@dataclass(slots=True)
class Standing:
    """One participant of a round: player id, 1-based rank (equal ranks tie), his team's name
    (None for an individual entry) and the share of the match he played (partial play)."""

    player: str
    rank: int
    team: str | None = None
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class Support:
    """What a rater can rate beyond individual full-time rounds (see :func:`check_supported`)."""

    teams: bool = False
    mixed: bool = False
    partial: bool = False


INDIVIDUALS_ONLY = Support()
"""A rater of individual, full-time rounds only (the rating-only models)."""
TEAMS = Support(teams=True, mixed=True, partial=True)
"""A rater of teams, rounds mixing teams and individuals, and partial play (Elo-MMR for teams,
``stream.engine.teams``, in the stream and the batch commands; TrueSkill in the batch commands)."""


def check_supported(round_: RoundResult, support: Support, rater: str) -> None:
    """Raise ``teams_unsupported`` if ``round_`` has teams or partial play ``rater`` cannot rate,
    ``mixed_standings`` if it mixes teams and individuals and ``rater`` cannot rate that."""
    if not support.teams and round_.has_teams():  # the standings are read only for what the rater lacks
        raise RoundRejected(TEAMS_UNSUPPORTED, f"{rater} does not rate team rounds", "standings")
    if not support.partial and round_.is_partial():
        raise RoundRejected(TEAMS_UNSUPPORTED, f"{rater} does not rate partial play (player weights)", "standings")
    if not support.mixed and round_.has_teams() and any(s.team is None for s in round_.standings):
        raise RoundRejected(MIXED_STANDINGS, f"{rater} does not rate rounds mixing teams and individuals",
                            "standings")


@dataclass(kw_only=True)
class RoundResult:
    """A validated round.  ``occurred_at`` in epoch seconds; ``perf_ceiling`` inf = none."""

    round_id: str
    ladder: str = DEFAULT_LADDER
    occurred_at: float
    standings: list[Standing]
    weight: float = 1.0
    perf_ceiling: float = math.inf
    _hash: str | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def field_size(self) -> int:
        return len(self.standings)

    def players(self) -> list[str]:
        """Player ids, in standings order."""
        return [s.player for s in self.standings]

    def ranks(self) -> np.ndarray:
        """Ranks as an int64 array aligned with :meth:`players`."""
        return np.fromiter((s.rank for s in self.standings), dtype=np.int64, count=len(self.standings))

    def has_teams(self) -> bool:
        """True when some entry is a team."""
        return any(s.team is not None for s in self.standings)

    def is_partial(self) -> bool:
        """True when some player played part of the match (weight below 1)."""
        return any(s.weight != 1.0 for s in self.standings)

    def player_weights(self) -> np.ndarray:
        """Each player's share of the match, aligned with :meth:`players`."""
        return np.fromiter((s.weight for s in self.standings), dtype=np.float64, count=len(self.standings))

    def entries(self) -> tuple[np.ndarray, np.ndarray]:
        """``(entry, entry_ranks)``: each player's entry index (teams, and individuals as teams of
        one, numbered in standings order) and each entry's rank."""
        index: dict[str, int] = {}
        entry = np.empty(len(self.standings), dtype=np.int64)
        ranks: list[int] = []
        for i, s in enumerate(self.standings):
            if s.team is None:
                entry[i] = len(ranks)
                ranks.append(s.rank)
            else:
                found = index.get(s.team)
                if found is None:
                    found = index[s.team] = len(ranks)
                    ranks.append(s.rank)
                entry[i] = found
        return entry, np.asarray(ranks, dtype=np.int64)

    def entry_count(self) -> int:
        """Entries of the round: individuals, and each team once."""
        teams = {s.team for s in self.standings if s.team is not None}
        return len(teams) + sum(s.team is None for s in self.standings)

    def is_draw(self) -> bool:
        """True when two entries or more all tie (every standing has the same rank)."""
        first = self.standings[0].rank if self.standings else None
        return all(s.rank == first for s in self.standings) and self.entry_count() >= 2

    def is_outcome_free(self, draws_rate: bool) -> bool:
        """True when the round rates nobody: fewer than two entries (for every model), or a draw
        (:meth:`is_draw`) on a ladder whose model does not rate draws (``draws_rate``: the ladder's
        parameters' ``draws_rate``, ``stream.engine``; False for preset ``mmr``, as elo_mmr_py)."""
        return self.entry_count() < 2 or (not draws_rate and self.is_draw())

    def to_dict(self) -> dict[str, Any]:
        """The canonical JSON form: explicit ``{player, rank}`` standings, ceiling only if set."""
        out: dict[str, Any] = {
            "round_id": self.round_id,
            "ladder": self.ladder,
            "occurred_at": self.occurred_at,
            "standings": self._standings_dicts(),
            "weight": self.weight,
        }
        if math.isfinite(self.perf_ceiling):
            out["perf_ceiling"] = self.perf_ceiling
        return out

    def _standings_dicts(self) -> list[dict[str, Any]]:
        """Canonical standings: ``{player, rank[, weight]}`` and ``{team, players, rank}`` entries."""
        out: list[dict[str, Any]] = []
        teams: dict[str, list[Any]] = {}
        for s in self.standings:
            member: Any = s.player if s.weight == 1.0 else {"player": s.player, "weight": s.weight}
            if s.team is None:
                out.append({"player": s.player, "rank": s.rank} if s.weight == 1.0 else {**member, "rank": s.rank})
            elif s.team in teams:
                teams[s.team].append(member)
            else:
                teams[s.team] = [member]
                out.append({"team": s.team, "players": teams[s.team], "rank": s.rank})
        return out

    def to_json(self) -> str:
        """Compact canonical JSON (what producers may publish on ``rounds``)."""
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, raw: bytes | str | dict[str, Any], *, limits: Limits | None = None) -> RoundResult:
        """Same as :func:`parse_round` (rounds of fewer than two entries raise ``no_outcome``)."""
        return parse_round(raw, limits=limits or Limits())

    def content_hash(self) -> str:
        """sha256 (hex) of the canonical content, to detect a round_id reused for another round."""
        if self._hash is None:
            self._hash = hashlib.sha256(self._canonical_text().encode("utf-8")).hexdigest()
        return self._hash

    def _canonical_text(self) -> str:
        """The JSON text :meth:`content_hash` hashes."""
        canonical = [
            self.ladder, self.round_id, self.occurred_at,
            [[s.player, s.rank] if s.team is None and s.weight == 1.0 else [s.player, s.rank, s.team, s.weight]
             for s in self.standings],
            self.weight, self.perf_ceiling if math.isfinite(self.perf_ceiling) else None,
        ]
        return json.dumps(canonical, separators=(",", ":"), ensure_ascii=False)


def conflict(round_: RoundResult, first_seq: int) -> RoundRejected:
    """The rejection of a round whose (ladder, round_id) was first accepted, as the ladder's
    round ``first_seq``, with different content: the first round stands (stream and replay)."""
    return RoundRejected(CONFLICT, f"round_id {round_.round_id!r} of ladder {round_.ladder!r} was already used "
                         f"(seq {first_seq}) for different content; the first round stands", "round_id")


def model_changed(round_: RoundResult, stored: str, configured: str) -> RoundRejected:
    """The rejection of a round of a ladder whose model is fixed (it has rated rounds with
    ``stored``) while the configuration (``LADDERS``) now names ``configured``."""
    return RoundRejected(MODEL_CHANGED, f"ladder {round_.ladder!r} rates with model {stored!r} (fixed once it "
                         f"has rated a round) but LADDERS now gives {configured!r}: changing a ladder's model is a "
                         f"re-rate; rate its history into a fresh ladder (stream backfill / stream replay "
                         f"--ladders) or restore {stored!r} in LADDERS", "ladder")


def parse_round(raw: bytes | str | dict[str, Any], *, limits: Limits) -> RoundResult:
    """Validate one ``RoundResult`` message and return it; raise :class:`RoundRejected`.

    Checks, in order: size, UTF-8, JSON (integers of at most 4,300 digits), round size, nesting,
    the JSON Schema, unknown fields (strict mode only), id lengths, ladder name, weight, ceiling
    and time ranges, ids encodable as UTF-8, duplicate players, and finally whether the round has
    two entries at least (``no_outcome`` carries the parsed round; a draw is valid).
    """
    return _validate(_decode(raw, limits), limits)


def _validate(data: Any, limits: Limits) -> RoundResult:
    """:func:`parse_round` of the decoded JSON value ``data``."""
    if not isinstance(data, dict):
        raise RoundRejected(SCHEMA, "a round must be a JSON object", None)
    standings_raw = data.get("standings")
    if isinstance(standings_raw, list) and len(standings_raw) > limits.max_round_size:
        raise RoundRejected(
            ROUND_TOO_LARGE,
            f"{len(standings_raw)} players, more than MAX_ROUND_SIZE={limits.max_round_size}",
            "standings",
        )
    items = data.get("standings")
    individuals = _individuals(items)
    plain = individuals is not None or (isinstance(items, list) and _plain_standings(items))
    _check_nesting(data, plain)
    _check_schema(data, plain)
    if limits.strict:
        _check_known_fields(data, standings_known=individuals is not None)

    round_id: str = data["round_id"]
    _check_length(round_id, "round_id", limits)
    ladder: str = data.get("ladder", DEFAULT_LADDER)
    _check_length(ladder, "ladder", limits)
    if not LADDER_PATTERN.match(ladder):
        raise RoundRejected(BAD_LADDER, f"ladder name {ladder!r} must match {LADDER_PATTERN.pattern}", "ladder")
    weight = _float(data.get("weight", 1.0))
    if not (0 < weight and limits.min_weight <= weight <= limits.max_weight):  # NaN fails too
        raise RoundRejected(BAD_WEIGHT, f"weight must be a number in [MIN_WEIGHT={limits.min_weight:g}, "
                            f"MAX_WEIGHT={limits.max_weight:g}], got {_show(data.get('weight'))}", "weight")
    ceiling = data.get("perf_ceiling")
    perf_ceiling = math.inf if ceiling is None else _float(ceiling)
    if ceiling is not None and not math.isfinite(perf_ceiling):
        raise RoundRejected(BAD_NUMBER, f"perf_ceiling must be a finite number or null, got {_show(ceiling)}",
                            "perf_ceiling")
    occurred_at = _parse_time(data["occurred_at"])
    _check_text(round_id, "round_id")

    standings = _standings(standings_raw, limits, individuals)  # type: ignore[arg-type]
    result = RoundResult(
        round_id=round_id, ladder=ladder, occurred_at=occurred_at, standings=standings,
        weight=weight, perf_ceiling=perf_ceiling,
    )
    if result.is_outcome_free(draws_rate=True):
        raise RoundRejected(
            NO_OUTCOME, f"{len(standings)} player(s) in fewer than two entries: nobody is rated",
            "standings", round=result,
        )
    return result


MAX_NESTING = 100
"""Deepest nesting of arrays and objects accepted in a round (``not_json`` beyond). The JSON
decoder's own limit is Python's recursion limit less the caller's stack depth, so without this
bound whether a message nested ~900 deep is accepted would depend on who parses it (the
worker, ``stream replay``, a test)."""


def _check_nesting(data: dict[str, Any], plain: bool) -> None:
    """Reject nesting deeper than MAX_NESTING; plain standings (``plain``: 3 levels) are not walked."""
    todo: list[tuple[Any, int]] = [(v, 2) for k, v in data.items()
                                   if isinstance(v, (list, dict)) and not (plain and k == "standings")]
    while todo:
        value, depth = todo.pop()
        if isinstance(value, (list, dict)):
            if depth > MAX_NESTING:
                raise RoundRejected(NOT_JSON, f"nested more than MAX_NESTING={MAX_NESTING} levels deep", None)
            todo.extend((v, depth + 1) for v in (value.values() if isinstance(value, dict) else value))


def _check_schema(data: dict[str, Any], plain: bool) -> None:
    """Validate against the compiled schema.  Standings in the plain forms (every item a
    ``{player: str, rank: int}`` object, or every item a player id / array of ids: ``plain``, as
    :func:`_plain_standings` found, same rules, ~50x faster on a million players) are left out of
    the compiled validator; anything else goes through it in full for a precise diagnosis."""
    if plain and _plain_top_level(data):
        return  # what the compiled validator accepts of it, checked directly
    target = {**data, "standings": []} if plain else data
    try:
        validator(ROUND_RESULT)(target)
    except SchemaError as exc:
        raise _schema_rejection(exc, data) from None


def _plain_top_level(data: dict[str, Any]) -> bool:
    """True if the compiled validator surely accepts the round's fields besides its standings:
    a non-empty string ``round_id``, ``occurred_at`` a number (int or float: a date-time string
    goes through the validator, which checks its format), ``standings`` present, ``ladder``
    absent or a string the schema's pattern matches whole (its ``$`` would also match before a
    final newline, which the validator refuses), ``weight`` absent or a number > 0,
    ``perf_ceiling`` absent, null or a number (other fields are not the schema's). False sends
    the round through the validator, which gives the verdict and its precise reason."""
    round_id, when = data.get("round_id"), data.get("occurred_at")
    if not (type(round_id) is str and round_id and (type(when) is float or type(when) is int)
            and "standings" in data):
        return False
    ladder = data.get("ladder", DEFAULT_LADDER)
    if not (type(ladder) is str and LADDER_PATTERN.fullmatch(ladder)):
        return False
    weight = data.get("weight", 1.0)
    if not ((type(weight) is float or type(weight) is int) and weight > 0):
        return False
    ceiling = data.get("perf_ceiling")
    return ceiling is None or type(ceiling) is float or type(ceiling) is int


MAX_RANK = 2**53 - 1
"""The schema's largest rank (exactly representable as a float everywhere)."""


def _individuals(items: Any) -> tuple[list[str], list[int]] | None:
    """The players and ranks of standings whose every item is exactly a ``{player, rank}`` object
    (no other field) with a non-empty string id and an integer rank in range (the common form:
    what the schema and strict mode accept of them, read in one pass); None for any other
    standings (empty ones included), which :func:`_plain_standings` and :func:`_standings` read."""
    if type(items) is not list or not items:
        return None
    players: list[str] = []
    ranks: list[int] = []
    for item in items:
        if type(item) is not dict or len(item) != 2:
            return None
        player, rank = item.get("player"), item.get("rank")
        if not (type(player) is str and player and type(rank) is int and 1 <= rank <= MAX_RANK):
            return None
        players.append(player)
        ranks.append(rank)
    return players, ranks


def _plain_standings(items: list[Any]) -> bool:
    """True if every item matches the schema's standing definitions with exact types: ``{player,
    rank}`` objects, or those and team entries (:func:`_plain_team`), or player ids / arrays."""
    if not items:
        return True
    if type(items[0]) is dict:
        players_ok = ranks_ok = True  # one pass: a duel's standings cost a few checks, not five passes
        for d in items:
            if type(d) is not dict:
                return False
            player, rank = d.get("player"), d.get("rank")
            if not (type(player) is str and player):
                players_ok = False
            elif not (type(rank) is int and 1 <= rank <= MAX_RANK):
                ranks_ok = False
        if not players_ok:
            return all(_plain_team(d) if "player" not in d else _plain_standing(d) for d in items)
        return ranks_ok
    return all(
        (type(x) is str and x) or (type(x) is list and x and all(type(p) is str and p for p in x))
        for x in items
    )


def _plain_standing(item: dict[str, Any]) -> bool:
    """An individual entry ``{player, rank}`` of exact types beside team entries (its ``weight`` is
    checked by ``_entries``; one with team fields too goes through the validator)."""
    player, rank = item.get("player"), item.get("rank")
    return (type(player) is str and bool(player) and type(rank) is int and 1 <= rank <= MAX_RANK
            and "team" not in item and "players" not in item)


def _plain_team(item: dict[str, Any]) -> bool:
    """A team entry ``{team, players, rank}`` that the schema's ``team`` definition accepts, with
    exact types: a non-empty name, at least one member (a player id, or ``{player, weight}`` with
    a weight in (0, 1]), an integer rank in range.  Anything else (an empty team, a bad member or
    weight) goes through the compiled validator for its precise reason."""
    team, members, rank = item.get("team"), item.get("players"), item.get("rank")
    if not (type(team) is str and team and type(members) is list and members and type(rank) is int
            and 1 <= rank <= MAX_RANK):
        return False
    for member in members:
        if type(member) is dict:
            player = member.get("player")
            if not (type(player) is str and player) or ("weight" in member and not _good_weight(member["weight"])):
                return False
        elif not (type(member) is str and member):
            return False
    return True


def decode_object(raw: bytes | str | dict[str, Any], limits: Limits, schema: str, *, what: str,
                  not_object: str, invalid: str) -> dict[str, Any]:
    """A message decoded (:func:`_decode`) and checked against ``schema``: RoundRejected with
    reason ``not_object`` if it is no JSON object, ``invalid`` (and the field) if the schema refuses it."""
    data = _decode(raw, limits)
    if not isinstance(data, dict):
        raise RoundRejected(not_object, f"a {what} must be a JSON object", None)
    try:
        validator(schema)(data)
    except SchemaError as exc:
        where = ".".join(str(p) for p in exc.path[1:]) or None
        raise RoundRejected(invalid, f"not a {what}: {exc.message}", where) from None
    return data


def _decode(raw: bytes | str | dict[str, Any], limits: Limits) -> Any:
    """Bytes or text to a decoded JSON value (dicts pass through)."""
    if isinstance(raw, dict):
        return raw
    if len(raw) > limits.max_message_bytes:
        raise RoundRejected(
            MESSAGE_TOO_LARGE, f"{len(raw)} bytes, more than MAX_MESSAGE_BYTES={limits.max_message_bytes}", None
        )
    if isinstance(raw, (bytes, bytearray, memoryview)):
        try:
            raw = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RoundRejected(NOT_UTF8, f"not valid UTF-8 at byte {exc.start}", None) from None
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, RecursionError) as exc:
        message = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        where = f" at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise RoundRejected(NOT_JSON, f"not JSON: {message}{where}", None) from None
    except ValueError as exc:  # an integer literal longer than sys.get_int_max_str_digits() (4,300)
        raise RoundRejected(BAD_NUMBER, f"a number too long to read: {exc}"[:200], None) from None


def _float(value: Any) -> float:
    """A JSON number as a float; an integer too large for one is ``inf`` (rejected by the caller)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _show(value: Any) -> str:
    """A short rendering of an offending value (a 4,000-digit integer is not echoed whole)."""
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else f"an integer of {len(str(abs(value)))} digits"
    return text if len(text) <= 60 else text[:57] + "..."


def _check_text(value: str, where: str) -> None:
    """Reject a string that is not valid Unicode text: a lone surrogate (JSON allows the escape
    ``\\ud800``) cannot be written as UTF-8, to Redis, Kafka or a content hash."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise RoundRejected(NOT_UTF8, f"a lone surrogate U+{ord(value[exc.start]):04X} at character {exc.start} "
                            "cannot be encoded as UTF-8", where) from None


def _path(parts: list[Any]) -> str:
    """fastjsonschema's ``['data', 'standings', 3, 'rank']`` as ``standings[3].rank``."""
    out = ""
    for part in parts[1:]:
        index = isinstance(part, int) or (isinstance(part, str) and part.isdigit())
        out += f"[{part}]" if index else (f".{part}" if out else str(part))
    return out


def _schema_rejection(exc: SchemaError, data: dict[str, Any]) -> RoundRejected:
    """Map a schema violation to the most specific reason code and field."""
    parts = list(exc.path)
    where = _path(parts)
    top = parts[1] if len(parts) > 1 else None
    if top == "ladder" and exc.rule == "pattern":
        return RoundRejected(BAD_LADDER, f"ladder name must match {LADDER_PATTERN.pattern}", "ladder")
    if top == "weight":
        return RoundRejected(BAD_WEIGHT, f"weight must be a number > 0, got {_show(data.get('weight'))}", "weight")
    if exc.rule == "required" and len(parts) == 1:
        missing = next((f for f in ("round_id", "occurred_at", "standings") if f not in data), None)
        return RoundRejected(SCHEMA, f"required field {missing!r} is missing", missing)
    if top == "occurred_at":
        return RoundRejected(SCHEMA, "occurred_at must be an RFC 3339 date-time with offset or epoch seconds", "occurred_at")
    if top == "standings" and len(parts) > 2:
        index = int(parts[2])
        return _standing_rejection(data["standings"][index], index)
    message = exc.message.replace("data.", "", 1).replace("data ", "round ", 1)
    return RoundRejected(SCHEMA, message, where or None)


def _standing_rejection(item: Any, index: int) -> RoundRejected:
    """Explain why standings item ``index`` fits none of the three accepted forms."""
    where = f"standings[{index}]"
    if isinstance(item, dict) and "team" in item and "player" not in item:
        return _team_rejection(item, where)
    if isinstance(item, dict):
        if not isinstance(item.get("player"), str) or not item.get("player"):
            return RoundRejected(SCHEMA, "player must be a non-empty string", f"{where}.player")
        if "rank" not in item:
            return RoundRejected(SCHEMA, "rank is required", f"{where}.rank")
        if "weight" in item and not _good_weight(item["weight"]):
            return _weight_rejection(item["weight"], f"{where}.weight")
        return RoundRejected(BAD_RANK, f"rank must be a positive integer, got {_show(item['rank'])}", f"{where}.rank")
    return RoundRejected(
        SCHEMA, "a standing is {player, rank}, a player id, or an array of tied player ids", where
    )


def _good_weight(value: Any) -> bool:
    """A player weight is a JSON number in (0, 1] (NaN fails)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1


def _weight_rejection(value: Any, where: str) -> RoundRejected:
    return RoundRejected(BAD_PLAYER_WEIGHT, f"a player's weight (share of the match played) must be a number "
                         f"in (0, 1], got {_show(value)}", where)


def _team_rejection(item: dict[str, Any], where: str) -> RoundRejected:
    """Explain why team entry ``item`` is not ``{team, players, rank}``."""
    if not isinstance(item.get("team"), str) or not item.get("team"):
        return RoundRejected(SCHEMA, "team must be a non-empty string", f"{where}.team")
    members = item.get("players")
    if not isinstance(members, list):
        return RoundRejected(SCHEMA, "a team's players must be an array", f"{where}.players")
    if not members:
        return RoundRejected(EMPTY_TEAM, f"team {item['team']!r} has no players", f"{where}.players")
    for j, member in enumerate(members):
        at = f"{where}.players[{j}]"
        if isinstance(member, dict):
            if not isinstance(member.get("player"), str) or not member.get("player"):
                return RoundRejected(SCHEMA, "player must be a non-empty string", f"{at}.player")
            if "weight" in member and not _good_weight(member["weight"]):
                return _weight_rejection(member["weight"], f"{at}.weight")
        elif not isinstance(member, str) or not member:
            return RoundRejected(SCHEMA, "a team member is a player id or {player, weight}", at)
    if "rank" not in item:
        return RoundRejected(SCHEMA, "rank is required", f"{where}.rank")
    return RoundRejected(BAD_RANK, f"rank must be a positive integer, got {_show(item['rank'])}", f"{where}.rank")


def _check_known_fields(data: dict[str, Any], standings_known: bool = False) -> None:
    """Strict mode: reject fields the schema does not define (``standings_known``: the standings
    items are ``{player, rank}`` objects without other fields, :func:`_individuals`)."""
    unknown = sorted(set(data) - TOP_LEVEL_FIELDS)
    if unknown:
        raise RoundRejected(UNKNOWN_FIELD, f"unknown field {unknown[0]!r}", unknown[0])
    if standings_known:
        return
    for i, item in enumerate(data["standings"]):
        if not isinstance(item, dict):
            continue
        team = "player" not in item  # as the schema tells the two apart
        known = TEAM_FIELDS if team else STANDING_FIELDS
        if not known.issuperset(item):
            extra = sorted(set(item) - known)[0]
            raise RoundRejected(UNKNOWN_FIELD, f"unknown field {extra!r}", f"standings[{i}].{extra}")
        for j, member in enumerate(item["players"] if team else ()):
            if isinstance(member, dict) and not MEMBER_FIELDS.issuperset(member):
                extra = sorted(set(member) - MEMBER_FIELDS)[0]
                raise RoundRejected(UNKNOWN_FIELD, f"unknown field {extra!r}", f"standings[{i}].players[{j}].{extra}")


def _check_length(value: str, where: str, limits: Limits) -> None:
    if len(value) > limits.max_id_length:
        raise RoundRejected(
            ID_TOO_LONG, f"{len(value)} characters, more than MAX_ID_LENGTH={limits.max_id_length}", where
        )


def _parse_time(value: str | float) -> float:
    """RFC 3339 date-time (with offset) or epoch seconds → epoch seconds."""
    if isinstance(value, str):
        if not RFC3339.match(value):
            raise RoundRejected(SCHEMA, f"occurred_at {value!r} is not an RFC 3339 date-time", "occurred_at")
        text = value.replace("z", "Z").replace("t", "T")
        try:
            return datetime.fromisoformat(text).timestamp()
        except ValueError as exc:
            raise RoundRejected(SCHEMA, f"occurred_at {value!r}: {exc}", "occurred_at") from None
    seconds = _float(value)
    if not MIN_TIME <= seconds <= MAX_TIME:  # NaN fails too
        raise RoundRejected(BAD_NUMBER, f"occurred_at must be epoch seconds within years 1 to 9999 "
                            f"[{MIN_TIME:.0f}, {MAX_TIME:.0f}], got {_show(value)}", "occurred_at")
    return seconds


def _standings(items: list[Any], limits: Limits,
               individuals: tuple[list[str], list[int]] | None = None) -> list[Standing]:
    """Schema-valid standings items → :class:`Standing` list; duplicate and length checks.
    ``individuals``: the items' players and ranks when :func:`_individuals` read them."""
    max_len = limits.max_id_length
    explicit = bool(items) and isinstance(items[0], dict)
    if individuals is None:
        for i, item in enumerate(items):
            if isinstance(item, dict) != explicit:
                raise RoundRejected(
                    SCHEMA, "explicit {player, rank} standings cannot be mixed with finishing order", f"standings[{i}]"
                )
    teams: list[str | None] | None = None
    weights: list[float] | None = None
    if individuals is not None:
        players, ranks = individuals
    elif explicit and any("players" in item or "weight" in item for item in items):
        players, ranks, teams, weights = _entries(items)
    elif explicit:
        players = [item["player"] for item in items]
        ranks = [item["rank"] for item in items]
        if not all(type(r) is int for r in ranks):
            ranks = [int(r) for r in ranks]  # integral floats such as 2.0 pass the schema
    else:
        players, ranks = [], []
        place = 1
        for item in items:
            group = [item] if isinstance(item, str) else item
            players.extend(group)
            ranks.extend([place] * len(group))
            place += len(group)
    if len(players) > limits.max_round_size:
        raise RoundRejected(
            ROUND_TOO_LARGE, f"{len(players)} players, more than MAX_ROUND_SIZE={limits.max_round_size}", "standings"
        )
    if max(map(len, players), default=0) > max_len:
        i = next(i for i, p in enumerate(players) if len(p) > max_len)
        raise RoundRejected(ID_TOO_LONG, f"player id of {len(players[i])} characters, more than MAX_ID_LENGTH={max_len}",
                            _player_path(items, i))
    try:
        "".join(players).encode("utf-8")
    except UnicodeEncodeError:
        i = next(i for i, p in enumerate(players) if not _encodable(p))
        _check_text(players[i], _player_path(items, i))
    if len(set(players)) != len(players):
        seen: set[str] = set()
        for i, p in enumerate(players):
            if p in seen:
                raise RoundRejected(DUPLICATE_PLAYER, f"player {p!r} appears twice", _player_path(items, i))
            seen.add(p)
    if teams is None or weights is None:
        return list(map(Standing, players, ranks))
    return list(map(Standing, players, ranks, teams, weights))


def _entries(items: list[dict[str, Any]]) -> tuple[list[str], list[int], list[str | None], list[float]]:
    """Schema-valid explicit entries with teams or weights, flattened one row per player; rejects
    an empty team, a team name used twice and a player weight outside (0, 1] (the schema checks
    these too, but plain individual entries skip the compiled validator)."""
    players: list[str] = []
    ranks: list[int] = []
    teams: list[str | None] = []
    weights: list[float] = []
    named: set[str] = set()
    for i, item in enumerate(items):
        rank = int(item["rank"])
        if "player" in item:  # an individual (the schema's ``standing``; a ``players`` field is ignored)
            weight = item.get("weight", 1.0)
            if not _good_weight(weight):
                raise _weight_rejection(weight, f"standings[{i}].weight")
            players.append(item["player"])
            ranks.append(rank)
            teams.append(None)
            weights.append(float(weight))
            continue
        team = item["team"]
        if not item["players"]:
            raise RoundRejected(EMPTY_TEAM, f"team {team!r} has no players", f"standings[{i}].players")
        if team in named:
            raise RoundRejected(DUPLICATE_TEAM, f"team {team!r} appears twice", f"standings[{i}].team")
        named.add(team)
        for j, member in enumerate(item["players"]):
            weight = member.get("weight", 1.0) if isinstance(member, dict) else 1.0
            if not _good_weight(weight):
                raise _weight_rejection(weight, f"standings[{i}].players[{j}].weight")
            players.append(member["player"] if isinstance(member, dict) else member)
            ranks.append(rank)
            teams.append(team)
            weights.append(float(weight))
    return players, ranks, teams, weights


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _player_path(items: list[Any], flat_index: int) -> str:
    """Field path of the ``flat_index``-th player, whichever standings form was used."""
    if items and isinstance(items[0], dict):
        for i, item in enumerate(items):
            members = item.get("players") if isinstance(item, dict) and "player" not in item else None
            size = len(members) if isinstance(members, list) else 1
            if flat_index < size:
                if not isinstance(members, list):
                    return f"standings[{i}].player"
                return f"standings[{i}].players[{flat_index}]" + (".player" if isinstance(members[flat_index], dict) else "")
            flat_index -= size
        return "standings"
    for i, item in enumerate(items):
        if isinstance(item, str):
            if flat_index == 0:
                return f"standings[{i}]"
            flat_index -= 1
        elif flat_index < len(item):
            return f"standings[{i}][{flat_index}]"
        else:
            flat_index -= len(item)
    return "standings"
