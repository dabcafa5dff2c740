"""``RoundResult``: one ranked round of one ladder, and :func:`parse_round`, its one reader and validator
(schema ``schemas/round-result.v2.json``; the standings forms are in docs/contracts.md). A rejection is a
:class:`RoundRejected`: a ``reason`` (:data:`REASONS`), a message, the field as a path (``standings[3].rank``).
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

from stream.contracts.schemas import DATE_TIME, SchemaError, validator
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
"""A rejected correction's own codes (``stream.contracts.correction``; docs/history.md for ``history_trimmed``)."""
ROUND_REASONS = (
    NOT_UTF8, NOT_JSON, SCHEMA, UNKNOWN_FIELD, NO_OUTCOME, DUPLICATE_PLAYER, BAD_RANK,
    BAD_WEIGHT, ID_TOO_LONG, ROUND_TOO_LARGE, MESSAGE_TOO_LARGE, BAD_LADDER, BAD_NUMBER, CONFLICT,
    EMPTY_TEAM, DUPLICATE_TEAM, BAD_PLAYER_WEIGHT, MIXED_STANDINGS, TEAMS_UNSUPPORTED, MODEL_CHANGED,
)
"""A rejected round's codes: ``conflict`` is found against the rounds already accepted, ``teams_unsupported``
and ``mixed_standings`` by :func:`check_supported`, ``model_changed`` by registration (:func:`model_changed`)."""
BAD_TICKET = "bad_ticket"
UNKNOWN_QUEUE = "unknown_queue"
BAD_PARTY = "bad_party"
TICKET_REASONS = (BAD_TICKET, UNKNOWN_QUEUE, BAD_PARTY)
"""A rejected ``match-tickets`` message's own codes (``stream.contracts.tickets``)."""
REASONS = (*ROUND_REASONS, BAD_PLAYER_UPDATE, UNVERIFIED_PLAYER_UPDATE, INTERNAL_ERROR, *CORRECTION_REASONS,
           *TICKET_REASONS)
"""Every reason code of a dead letter; ``internal_error``: a message whose handling kept raising
HANDLER_ATTEMPTS times, set aside so the stream moves on."""

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
    """A round that cannot be rated: ``reason`` (:data:`REASONS`), ``message``, ``field``; for
    ``no_outcome`` the parsed round is on ``round``."""

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
        return cls(settings.max_round_size, settings.max_message_bytes, settings.max_id_length,
                   settings.strict_schema, settings.min_weight, settings.max_weight)


STORED = Limits(max_round_size=2**62, max_message_bytes=2**62, max_id_length=2**62, strict=False,
                min_weight=0.0, max_weight=math.inf)
"""Limits for re-reading a stored, accepted round: the contract's fixed rules only (limits tightened
since must not stall a round accepted before)."""


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
"""A rater of teams, mixed rounds and partial play (Elo-MMR for teams, ``stream.engine.teams``; TrueSkill)."""


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
        """True when the round rates nobody: fewer than two entries, or a draw (:meth:`is_draw`) on a
        ladder whose model does not rate draws (its parameters' ``draws_rate``)."""
        return self.entry_count() < 2 or (not draws_rate and self.is_draw())

    def to_dict(self) -> dict[str, Any]:
        """The canonical JSON form: ``{player, rank[, weight]}`` and ``{team, players, rank}`` standings,
        ceiling only if set."""
        standings: list[dict[str, Any]] = []
        teams: dict[str, list[Any]] = {}
        for s in self.standings:
            member: Any = s.player if s.weight == 1.0 else {"player": s.player, "weight": s.weight}
            if s.team is None:
                standings.append({"player": s.player, "rank": s.rank} if s.weight == 1.0 else member | {"rank": s.rank})
            elif s.team in teams:
                teams[s.team].append(member)
            else:
                teams[s.team] = [member]
                standings.append({"team": s.team, "players": teams[s.team], "rank": s.rank})
        out = {"round_id": self.round_id, "ladder": self.ladder, "occurred_at": self.occurred_at,
               "standings": standings, "weight": self.weight}
        if math.isfinite(self.perf_ceiling):
            out["perf_ceiling"] = self.perf_ceiling
        return out

    def to_json(self) -> str:
        """Compact canonical JSON (what producers may publish on ``rounds``)."""
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False)

    def content_hash(self) -> str:
        """sha256 (hex) of the canonical content (a JSON array of it), to detect a round_id reused for another round."""
        if self._hash is None:
            canonical = [
                self.ladder, self.round_id, self.occurred_at,
                [[s.player, s.rank] if s.team is None and s.weight == 1.0 else [s.player, s.rank, s.team, s.weight]
                 for s in self.standings],
                self.weight, self.perf_ceiling if math.isfinite(self.perf_ceiling) else None,
            ]
            text = json.dumps(canonical, separators=(",", ":"), ensure_ascii=False)
            self._hash = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return self._hash


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
    """Validate one ``RoundResult`` message and return it; raise :class:`RoundRejected` (checks in order:
    size, UTF-8, JSON, nesting, schema, strict fields, ids, ladder, numbers, duplicates, two entries): the rules
    of ``schemas/round-result.v2.json`` (the tests check the two agree) in its order of fields, then the contract's."""
    data = _decode(raw, limits)
    if not isinstance(data, dict):
        raise RoundRejected(SCHEMA, "a round must be a JSON object", None)
    items = data.get("standings")
    if isinstance(items, list) and len(items) > limits.max_round_size:
        raise RoundRejected(
            ROUND_TOO_LARGE, f"{len(items)} players, more than MAX_ROUND_SIZE={limits.max_round_size}", "standings"
        )
    read = _Standings(items, limits.strict) if isinstance(items, list) else None
    if read is not None and read.deep or any(isinstance(v, (list, dict)) and _too_deep(v, 2)
                                             for k, v in data.items() if k != "standings"):
        raise RoundRejected(NOT_JSON, f"nested more than MAX_NESTING={MAX_NESTING} levels deep", None)
    missing = next((f for f in ("round_id", "occurred_at", "standings") if f not in data), None)
    if missing is not None:
        raise RoundRejected(SCHEMA, f"required field {missing!r} is missing", missing)
    round_id, ladder, when = data["round_id"], data.get("ladder", DEFAULT_LADDER), data["occurred_at"]
    if not isinstance(round_id, str) or not round_id:
        raise RoundRejected(SCHEMA, "round_id must be " + ("string" if not isinstance(round_id, str) else
                                                          "longer than or equal to 1 characters"), "round_id")
    if not isinstance(ladder, str):
        raise RoundRejected(SCHEMA, "ladder must be string", "ladder")
    if not LADDER_PATTERN.fullmatch(ladder):
        raise RoundRejected(BAD_LADDER, f"ladder name must match {LADDER_PATTERN.pattern}", "ladder")
    if not (_is_number(when) or isinstance(when, str) and DATE_TIME.match(when)):
        raise RoundRejected(SCHEMA, "occurred_at must be an RFC 3339 date-time with offset or epoch seconds",
                            "occurred_at")
    if read is None:
        raise RoundRejected(SCHEMA, "standings must be array", "standings")
    if read.invalid is not None:
        raise read.invalid
    if not _is_number(data.get("weight", 1.0)) or data.get("weight", 1.0) <= 0:
        raise RoundRejected(BAD_WEIGHT, f"weight must be a number > 0, got {_show(data.get('weight'))}", "weight")
    ceiling = data.get("perf_ceiling")
    if ceiling is not None and not _is_number(ceiling):
        raise RoundRejected(SCHEMA, "perf_ceiling must be number or null", "perf_ceiling")
    unknown = sorted(set(data) - TOP_LEVEL_FIELDS) if limits.strict else []
    if unknown:
        raise RoundRejected(UNKNOWN_FIELD, f"unknown field {unknown[0]!r}", unknown[0])
    if read.unknown is not None:
        raise read.unknown

    _check_length(round_id, "round_id", limits)
    _check_length(ladder, "ladder", limits)
    weight = _float(data.get("weight", 1.0))
    if not (0 < weight and limits.min_weight <= weight <= limits.max_weight):  # NaN fails too
        raise RoundRejected(BAD_WEIGHT, f"weight must be a number in [MIN_WEIGHT={limits.min_weight:g}, "
                            f"MAX_WEIGHT={limits.max_weight:g}], got {_show(data.get('weight'))}", "weight")
    perf_ceiling = math.inf if ceiling is None else _float(ceiling)
    if ceiling is not None and not math.isfinite(perf_ceiling):
        raise RoundRejected(BAD_NUMBER, f"perf_ceiling must be a finite number or null, got {_show(ceiling)}",
                            "perf_ceiling")
    occurred_at = _parse_time(when)
    _check_text(round_id, "round_id")
    standings = read.standings(items, limits)  # type: ignore[arg-type]
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
"""Deepest nesting accepted (``not_json`` beyond): the decoder's own limit depends on the caller's
stack depth, so the verdict would depend on who parses it."""
MAX_RANK = 2**53 - 1
"""The schema's largest rank (exactly representable as a float everywhere)."""


def _too_deep(value: Any, depth: int) -> bool:
    """True if ``value``, ``depth`` levels down the round, holds a list or object deeper than MAX_NESTING."""
    todo = [(value, depth)]
    while todo:
        value, depth = todo.pop()
        if isinstance(value, (list, dict)):
            if depth > MAX_NESTING:
                return True
            todo.extend((v, depth + 1) for v in (value.values() if isinstance(value, dict) else value))
    return False


class _Standings:
    """One walk of a round's standings (any form): each player's rank, team and weight, whether something nests
    too deep, and the first rejection of each kind, which :func:`parse_round` raises in the contract's order."""

    def __init__(self, items: list[Any], strict: bool) -> None:
        self.players: list[str] = []
        self.ranks: list[int] = []
        self.teams: list[str | None] | None = None  # None while every entry is an individual playing in full
        self.weights: list[float] = []
        self.deep = False
        self.named: set[str] = set()
        self.invalid: RoundRejected | None = None
        self.unknown: RoundRejected | None = None
        self.mixed: RoundRejected | None = None
        self.duplicate: RoundRejected | None = None
        explicit = bool(items) and isinstance(items[0], dict)
        players, ranks = self.players, self.ranks
        place = 1
        for i, item in enumerate(items):
            if type(item) is dict and explicit:  # the common form first: {player: non-empty str, rank: int}
                player, rank = item.get("player"), item.get("rank")
                if (type(player) is str and player and type(rank) is int and 1 <= rank <= MAX_RANK and len(item) == 2
                        and self.teams is None):
                    players.append(player)
                    ranks.append(rank)
                    continue
            elif type(item) is str and item and not explicit:
                players.append(item)
                ranks.append(place)
                place += 1
                continue
            if self.mixed is None and isinstance(item, dict) != explicit:
                self.mixed = RoundRejected(
                    SCHEMA, "explicit {player, rank} standings cannot be mixed with finishing order", f"standings[{i}]"
                )
            if isinstance(item, dict):
                self._entry(item, i, strict)
                continue
            group = [item] if isinstance(item, str) else item  # finishing order (in a mixed round: refused later)
            if isinstance(group, list) and group and all(isinstance(p, str) and p for p in group):
                players.extend(group)
                ranks.extend([place] * len(group))
                place += len(group)
                continue
            self.deep = self.deep or _too_deep(item, 3)
            self.invalid = self.invalid or RoundRejected(
                SCHEMA, "a standing is {player, rank}, a player id, or an array of tied player ids", f"standings[{i}]"
            )

    def _entry(self, item: dict[str, Any], i: int, strict: bool) -> None:
        """Read an explicit entry: an individual (a ``player`` field) or a team."""
        if self.teams is None:  # from now on each player's team and weight are kept
            self.teams = [None] * len(self.players)
            self.weights = [1.0] * len(self.players)
        players, ranks, teams, weights = self.players, self.ranks, self.teams, self.weights
        if "team" not in item:  # an individual of exact types first
            player, rank, weight = item.get("player"), item.get("rank"), item.get("weight", 1.0)
            if (type(player) is str and player and type(rank) is int and 1 <= rank <= MAX_RANK
                    and type(weight) is float and 0 < weight <= 1 and STANDING_FIELDS.issuperset(item)):
                players.append(player)
                ranks.append(rank)
                teams.append(None)
                weights.append(weight)
                return
        where = f"standings[{i}]"
        individual = "player" in item or "team" not in item  # as the schema's error tells the two apart
        problem = _individual_problem(item, where) if individual else _team_problem(item, where)
        if problem is not None:
            self.deep = self.deep or _too_deep(item, 3)
            self.invalid = self.invalid or problem
            return
        rank = int(item["rank"])
        if not (STANDING_FIELDS if individual else TEAM_FIELDS).issuperset(item):
            self._known(item, STANDING_FIELDS if individual else TEAM_FIELDS, where, 3, strict)
        if individual:
            players.append(item["player"])
            ranks.append(rank)
            teams.append(None)
            weights.append(float(item.get("weight", 1.0)))
            return
        team = item["team"]
        if self.duplicate is None and team in self.named:
            self.duplicate = RoundRejected(DUPLICATE_TEAM, f"team {team!r} appears twice", f"{where}.team")
        self.named.add(team)
        members = item["players"]
        players += [m if type(m) is str else m["player"] for m in members]
        weights += [1.0 if type(m) is str else float(m.get("weight", 1.0)) for m in members]
        ranks += [rank] * len(members)
        teams += [team] * len(members)
        for j, member in enumerate(members):  # a member's fields beyond {player, weight}
            if type(member) is dict and not MEMBER_FIELDS.issuperset(member):
                self._known(member, MEMBER_FIELDS, f"{where}.players[{j}]", 5, strict)

    def _known(self, item: dict[str, Any], known: frozenset[str], where: str, depth: int, strict: bool) -> None:
        """The fields of a valid entry or member beyond ``known``: refused in strict mode, nesting checked."""
        extra = sorted(set(item) - known)
        self.deep = self.deep or any(_too_deep(item[k], depth + 1) for k in extra)
        if strict and self.unknown is None:
            self.unknown = RoundRejected(UNKNOWN_FIELD, f"unknown field {extra[0]!r}", f"{where}.{extra[0]}")

    def standings(self, items: list[Any], limits: Limits) -> list[Standing]:
        """The :class:`Standing` list, after the checks across entries: forms, teams, size, ids, duplicates."""
        for later in (self.mixed, self.duplicate):
            if later is not None:
                raise later
        players, max_len = self.players, limits.max_id_length
        if len(players) > limits.max_round_size:
            raise RoundRejected(ROUND_TOO_LARGE, f"{len(players)} players, more than MAX_ROUND_SIZE="
                                f"{limits.max_round_size}", "standings")
        if max(map(len, players), default=0) > max_len:
            i = next(i for i, p in enumerate(players) if len(p) > max_len)
            raise RoundRejected(ID_TOO_LONG, f"player id of {len(players[i])} characters, more than MAX_ID_LENGTH="
                                f"{max_len}", _player_path(items, i))
        try:
            "".join(players).encode("utf-8")
        except UnicodeEncodeError:
            i = next(i for i, p in enumerate(players) if re.search("[\ud800-\udfff]", p))  # a lone surrogate
            _check_text(players[i], _player_path(items, i))
        if len(set(players)) != len(players):
            seen: set[str] = set()
            for i, p in enumerate(players):
                if p in seen:
                    raise RoundRejected(DUPLICATE_PLAYER, f"player {p!r} appears twice", _player_path(items, i))
                seen.add(p)
        if self.teams is None:
            return list(map(Standing, players, self.ranks))
        return list(map(Standing, players, self.ranks, self.teams, self.weights))


def _is_number(value: Any) -> bool:
    """A JSON number (a bool is not one)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _individual_problem(item: dict[str, Any], where: str) -> RoundRejected | None:
    """Why an individual entry is not ``{player, rank[, weight]}``, or None."""
    if not isinstance(item.get("player"), str) or not item.get("player"):
        return RoundRejected(SCHEMA, "player must be a non-empty string", f"{where}.player")
    if "rank" in item and "weight" in item and not _good_weight(item["weight"]):
        return _weight_rejection(item["weight"], f"{where}.weight")
    # an entry that is both an individual and a team fits two of the schema's forms: refused
    return _rank_problem(item, where, "team" in item and _team_problem(item, where) is None)


def _rank_problem(item: dict[str, Any], where: str, refused: bool = False) -> RoundRejected | None:
    """Why an entry's rank is not a positive integer (or the entry is ``refused``), or None."""
    if "rank" not in item:
        return RoundRejected(SCHEMA, "rank is required", f"{where}.rank")
    rank = item["rank"]  # an integer (2.0 is one) in [1, MAX_RANK]
    if (type(rank) is int or type(rank) is float and rank.is_integer()) and 1 <= rank <= MAX_RANK and not refused:
        return None
    return RoundRejected(BAD_RANK, f"rank must be a positive integer, got {_show(item['rank'])}", f"{where}.rank")


def _team_problem(item: dict[str, Any], where: str) -> RoundRejected | None:
    """Why a team entry is not ``{team, players, rank}`` (members: ids or ``{player, weight}``), or None."""
    team, members = item.get("team"), item.get("players")
    if not isinstance(team, str) or not team:
        return RoundRejected(SCHEMA, "team must be a non-empty string", f"{where}.team")
    if not isinstance(members, list):
        return RoundRejected(SCHEMA, "a team's players must be an array", f"{where}.players")
    if not members:
        return RoundRejected(EMPTY_TEAM, f"team {team!r} has no players", f"{where}.players")
    for j, member in enumerate(members):
        if type(member) is str and member:
            continue
        if not isinstance(member, dict):
            return RoundRejected(SCHEMA, "a team member is a player id or {player, weight}", f"{where}.players[{j}]")
        player = member.get("player")
        if not isinstance(player, str) or not player:
            return RoundRejected(SCHEMA, "player must be a non-empty string", f"{where}.players[{j}].player")
        if "weight" in member and not _good_weight(member["weight"]):
            return _weight_rejection(member["weight"], f"{where}.players[{j}].weight")
    return _rank_problem(item, where)


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


def _good_weight(value: Any) -> bool:
    """A player weight is a JSON number in (0, 1] (NaN fails)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= 1


def _weight_rejection(value: Any, where: str) -> RoundRejected:
    return RoundRejected(BAD_PLAYER_WEIGHT, f"a player's weight (share of the match played) must be a number "
                         f"in (0, 1], got {_show(value)}", where)


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
