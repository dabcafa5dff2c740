"""Season operations over the store: league thresholds from target shares, recomputed from the
live distribution, and a season's final standings archived.

League shares (``LADDERS[ladder].seasons.shares``/``top``, ``stream.engine.league_shares``): the
thresholds are cut from the leaderboard (its score is the display rating: in conservative mode
the lower bound ``mu - k*sigma`` of the confident promotion rule) at the ranks the shares give, in
one round trip (ZRANGE at those ranks); with the display's ``active_days`` only the players with a
round within that many days count (the board scanned); they are kept with the time they took
effect (``stream.store.seasons``). A player's league under shares is the highest whose threshold his
display rating reaches (:func:`share_leagues`).

A player's season (:func:`player_season`): his rounds of the season now (from his rating
history), whether he is still in placement, his league under the share thresholds in effect, his
points (display rating plus the bonus pool's
points he took, ``stream.engine.bonus``; display only) and his archived past seasons.

Archive: the final standing of a player in season S is his state after his last round of S. A
player whose last round lies in S has it stored (the soft reset is lazy: nothing touched it);
one who played on into a later season has it in his rating history (the last RatingChange of S).
The archive is rebuilt from those whenever it is asked for (``stream season archive``); run it
when a season ends, before players play HISTORY_LENGTH rounds of the next (older entries are
trimmed; such a player is left out and counted in ``Archived.missing``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from stream.engine.bonus import bonus
from stream.engine.display import PLACEMENT_PREFIX, DisplayConfig, display_rating, league_division
from stream.engine.ladders import LadderConfig
from stream.engine.league_shares import boundary_ranks, league_of, thresholds_from
from stream.engine.season_schedule import Seasons, season_of
from stream.store import player_hash
from stream.store import seasons as store
from stream.store.client import AsyncRedis

READ_CHUNK = 5_000
"""Leaderboard players read per round trip while archiving (or cutting shares of active players)."""
DAY_S = 86_400.0


class SeasonsError(ValueError):
    """The ladder has no such season, or no league shares configured (the message says which)."""


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


async def recompute_shares(r: AsyncRedis, ladder: str, cfg: LadderConfig, display: DisplayConfig, *,
                           now: float) -> dict[str, Any]:
    """Cut the ladder's league thresholds from its live leaderboard at the configured shares, keep
    them as taking effect at ``now`` and return them (leagues, thresholds: null for -inf or a
    league nobody reaches, counts, players)."""
    seasons = cfg.seasons
    if seasons is None or seasons.leagues is None:
        raise SeasonsError(f"ladder {ladder!r} has no league shares (LADDERS[{ladder!r}].seasons.shares)")
    if display.active_days is None:  # every leaderboard player: the cut ranks read in one round trip
        n = await store.leaderboard_size(r, ladder)
        ranks = boundary_ranks(n, seasons.leagues)
        thresholds = thresholds_from(await store.scores_at_ranks(r, ladder, ranks.tolist()), n, seasons.leagues)
        counts = await store.counts_between(r, ladder, thresholds.tolist())
    else:  # the active players only (a round within the display's active_days): the board scanned
        scores = await _active_scores(r, ladder, now - display.active_days * DAY_S)
        n = len(scores)
        ranks = boundary_ranks(n, seasons.leagues)
        at = [float(scores[k]) if k < n else math.nan for k in ranks.tolist()]
        thresholds = thresholds_from(at, n, seasons.leagues)
        counts = np.bincount(league_of(scores, thresholds), minlength=len(thresholds)).tolist()
    doc = {"leagues": [name for name, _ in display.tiers], "thresholds": [_finite(t) for t in thresholds.tolist()],
           "counts": counts, "players": n, "shares": list(seasons.leagues.shares), "top": seasons.leagues.top}
    await store.record_shares(r, ladder, now, doc)
    return {"at": now, **doc}


async def _active_scores(r: AsyncRedis, ladder: str, since: float) -> np.ndarray:
    """Display ratings (ascending) of the leaderboard's players whose last round is at ``since`` or later."""
    out: list[float] = []
    offset = 0
    while rows := await store.leaderboard_rows(r, ladder, offset, READ_CHUNK):
        offset += len(rows)
        last = await store.player_fields(r, ladder, [p for p, _ in rows], (player_hash.LAST_TIME,))
        out += [score for (_, score), (t,) in zip(rows, last) if t is not None and float(t) >= since]
    return np.array(out, dtype=np.float64)


def share_leagues(scores: np.ndarray, doc: dict[str, Any]) -> list[str]:
    """The league name of each display rating under a stored threshold set."""
    thresholds = np.array([-math.inf if i == 0 and t is None else math.inf if t is None else t
                           for i, t in enumerate(doc["thresholds"])], dtype=np.float64)
    return [doc["leagues"][i] for i in league_of(scores, thresholds).tolist()]


@dataclass
class Archived:
    """What :func:`archive_season` stored: players archived, and ``missing``: players who played on
    into a later season and whose history no longer reaches back before its start (trimmed: they
    may have played in the season; their final standing is gone)."""

    season: str
    players: int = 0
    missing: int = 0
    standings: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)


def season_bounds(seasons: Seasons | None, season: str, ladder: str) -> tuple[int, float, float]:
    """(index, start, end) of the named season (end: the next start, or +inf)."""
    if seasons is None or season not in seasons.names:
        known = ", ".join(seasons.names) if seasons is not None and seasons.names else "none"
        raise SeasonsError(f"ladder {ladder!r} has no season {season!r} (its seasons: {known})")
    index = seasons.index_of(season)
    end = seasons.starts[index] if index < len(seasons.starts) else math.inf
    return index, seasons.starts[index - 1], end


async def archive_season(r: AsyncRedis, ladder: str, season: str, cfg: LadderConfig,
                         display: DisplayConfig) -> Archived:
    """Rebuild season ``season``'s archive: every player who played in it, his final rating, tier,
    league, division and rank (module docstring)."""
    seasons = cfg.seasons
    index, _, end = season_bounds(seasons, season, ladder)
    assert seasons is not None
    out = Archived(season)
    offset = 0
    while True:
        rows = await store.leaderboard_rows(r, ladder, offset, READ_CHUNK)
        if not rows:
            break
        offset += len(rows)
        players = [p for p, _ in rows]
        fields = await store.player_fields(r, ladder, players, player_hash.SEASON)
        last = np.array([math.nan if f[2] is None else float(f[2]) for f in fields])
        where = season_of(last, seasons)
        for player, f, at in zip(players, fields, where.tolist()):
            if at == index:
                out.standings[player] = {"mu": float(f[0] or "nan"), "sigma": float(f[1] or "nan"),
                                         "display_rating": float(f[3] or "nan"), "tier": f[4] or None,
                                         "rounds": int(f[5] or 0)}
        later = [(p, int(f[5] or 0)) for p, f, at in zip(players, fields, where.tolist()) if at > index]
        for (player, played), entries in zip(later, await store.histories(r, ladder, [p for p, _ in later])):
            final = _last_before(entries, end)
            if final is None:
                out.missing += len(entries) < played  # trimmed: his rounds before the end are gone
                continue
            if season_of(final["occurred_at"], seasons) != index:  # he did not play in the season
                continue
            out.standings[player] = {"mu": final["mu_after"], "sigma": final["sigma_after"],
                                     "display_rating": final["display_rating"], "tier": final.get("tier"),
                                     "rounds": final.get("rounds_played")}
    ranked = sorted(out.standings, key=lambda p: (-out.standings[p]["display_rating"], p))
    for rank, player in enumerate(ranked, start=1):
        doc = out.standings[player]
        league, division = league_division(doc["tier"], display)
        doc.update({"rank": rank, "league": league, "division": division})
    await store.write_archive(r, ladder, season, out.standings,
                              {p: d["display_rating"] for p, d in out.standings.items()})
    out.players = len(out.standings)
    return out


def _last_before(entries: list[bytes], end: float) -> dict[str, Any] | None:
    """The last RatingChange of a history (oldest first) before ``end``."""
    for raw in reversed(entries):
        change: dict[str, Any] = json.loads(raw)
        if float(change["occurred_at"]) < end:
            return change
    return None


async def player_season(r: AsyncRedis, ladder: str, player: str, cfg: LadderConfig, display: DisplayConfig, *,
                        now: float) -> dict[str, Any] | None:
    """A player's view of the season now and his past ones (module docstring); None for a player
    the ladder does not know. Rounds and bonus are read off his stored history (HISTORY_LENGTH
    rounds at most)."""
    seasons = cfg.seasons or Seasons()
    (row,) = await store.player_fields(r, ladder, [player], (player_hash.DISPLAY_RATING, player_hash.TIER, player_hash.LAST_TIME))
    if row[0] is None:
        return None
    index = int(season_of(now, seasons))
    start = seasons.starts[index - 1] if index >= 1 else -math.inf
    (entries,) = await store.histories(r, ladder, [player])
    changes = [c for c in (json.loads(raw) for raw in entries) if float(c["occurred_at"]) >= start]
    times = np.array([float(c["occurred_at"]) for c in changes])
    after = np.array([float(c["display_rating"]) for c in changes])
    before = display_rating(np.array([float(c["mu_before"]) for c in changes]),
                            np.array([float(c["sigma_before"]) for c in changes]), display)
    shown = float(row[0])
    doc: dict[str, Any] = {"ladder": ladder, "player": player, "season": seasons.name_of(index) or None,
                           "rounds": len(changes), "tier": row[1] or None,
                           "placement": bool(row[1]) and str(row[1]).startswith(PLACEMENT_PREFIX),
                           "display_rating": shown, "points": shown, "bonus_taken": 0.0, "bonus_pool": None}
    if seasons.bonus is not None:
        took = bonus(start if math.isfinite(start) else float(times[0]) if len(times) else now, times,
                     after - before, seasons.bonus, now)
        doc.update({"points": shown + took.total, "bonus_taken": took.total, "bonus_pool": took.pool_now})
    shares = await store.shares_at(r, ladder, now)
    doc["league_by_share"] = None if shares is None else share_leagues(np.array([shown]), shares)[0]
    past = list(seasons.names[:max(index - 1, 0)])
    doc["past"] = [{"season": name, **standing}
                   for name, standing in (await store.archived_player(r, ladder, player, past)).items()]
    return doc
