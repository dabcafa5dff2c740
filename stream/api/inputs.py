"""Parsing and bounding the read API's request inputs (query strings, path ids, JSON bodies)."""

from __future__ import annotations

import math
from urllib.parse import unquote

from aiohttp import web

from stream.api.errors import bad_request
from stream.contracts.round import BAD_PLAYER_WEIGHT, DUPLICATE_PLAYER, EMPTY_TEAM

MAX_PAGE_LIMIT = 200
"""Largest leaderboard / rounds page."""
MAX_OFFSET = 10_000_000
MAX_HISTORY = 1000
"""Largest number of history entries a player request may ask for."""
MAX_LOBBY = 64
"""Largest lobby a prediction request may propose."""
MAX_BODY_BYTES = 64 * 1024
"""Request bodies larger than this are refused with 413 (aiohttp's client_max_size)."""
MAX_WEIGHT = 1000.0
MAX_DRAW_MARGIN = 10_000.0
"""Largest draw margin (rating points) a team prediction may ask for."""


def int_query(request: web.Request, name: str, default: int, *, low: int, high: int) -> int:
    """An integer query parameter within [low, high], else 400."""
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise bad_request(f"{name} must be an integer, got {raw[:40]!r}") from None
    if not low <= value <= high:
        raise bad_request(f"{name} must be between {low} and {high}, got {value}")
    return value


def float_query(value: object, name: str, default: float, *, low: float, high: float) -> float:
    """A float (from a query string or a JSON body) within (low, high], else 400."""
    if value is None or value == "":
        return default
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise bad_request(f"{name} must be a number") from None
    if not (math.isfinite(out) and low < out <= high):
        raise bad_request(f"{name} must be in ({low}, {high}], got {out}")
    return out


def ident(value: str, what: str, max_length: int) -> str:
    """A ladder, player or round id from the request: non-empty, at most ``max_length`` characters, any
    other Unicode (the input contract's ids; never parsed, so no character is special)."""
    if not value or len(value) > max_length:
        raise bad_request(f"{what} must be 1 to {max_length} characters", code=f"bad_{what}")
    return value


def path_param(request: web.Request, name: str, what: str) -> str:
    """The route parameter ``{name}`` percent-decoded once, as strict UTF-8, from the raw path's segment
    (``match_info``'s decoding changed in aiohttp 3.10.6, aiohttp#8898; the router keeps ``%2F`` encoded)."""
    resource = request.match_info.route.resource
    assert resource is not None, "path_param is for handlers of dynamic routes"
    position = resource.canonical.split("/").index(f"{{{name}}}")
    segment = request.rel_url.raw_path.split("/")[position]
    try:
        return unquote(segment, errors="strict")
    except UnicodeDecodeError:
        raise bad_request(f"{what} must be percent-encoded UTF-8", code=f"bad_{what}") from None


def player_list(raw: object, max_length: int) -> list[str]:
    """The players of a prediction: 2..MAX_LOBBY distinct ids."""
    if isinstance(raw, str):
        raw = [p for p in raw.split(",") if p != ""]
    if not isinstance(raw, list) or not all(isinstance(p, str) for p in raw):
        raise bad_request("players must be a list of player ids (or a comma-separated string)")
    players = [ident(p, "player", max_length) for p in raw]
    if not 2 <= len(players) <= MAX_LOBBY:
        raise bad_request(f"a prediction needs 2 to {MAX_LOBBY} players, got {len(players)}")
    if len(set(players)) != len(players):
        raise bad_request("players must be distinct", code=DUPLICATE_PLAYER)
    return players


def team_list(raw: object, max_length: int) -> tuple[list[str], list[int], list[float]]:
    """The players of a prediction's teams (``a,b;c,d``, or lists of ids or ``{"player": P, "weight": w}``),
    each one's team index and share: 2..MAX_LOBBY teams, MAX_LOBBY players at most, none twice."""
    if isinstance(raw, str):
        raw = [[p for p in team.split(",") if p != ""] for team in raw.split(";") if team.strip(",") != ""]
    if not isinstance(raw, list) or not all(isinstance(team, list) for team in raw):
        raise bad_request("teams must be a list of teams, each a list of players (or a;b-separated string "
                          "'a,b;c,d')", code="bad_teams")
    players: list[str] = []
    entry: list[int] = []
    weights: list[float] = []
    for k, team in enumerate(raw):
        if not team:
            raise bad_request(f"team {k} has no players", code=EMPTY_TEAM)
        for member in team:
            if isinstance(member, dict) and isinstance(member.get("player"), str):
                name, share = member["player"], member.get("weight", 1.0)
            elif isinstance(member, str):
                name, share = member, 1.0
            else:
                raise bad_request("a team member is a player id or {player, weight}", code="bad_teams")
            if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
                raise bad_request(f"a player's weight (share of the match) must be in (0, 1], got {share!r}",
                                  code=BAD_PLAYER_WEIGHT)
            players.append(ident(name, "player", max_length))
            entry.append(k)
            weights.append(float(share))
    if not 2 <= len(raw) <= MAX_LOBBY or len(players) > MAX_LOBBY:
        raise bad_request(f"a prediction needs 2 to {MAX_LOBBY} teams and at most {MAX_LOBBY} players, got "
                          f"{len(raw)} teams of {len(players)} players", code="bad_teams")
    if len(set(players)) != len(players):
        raise bad_request("a player may be in one team only", code=DUPLICATE_PLAYER)
    return players, entry, weights
