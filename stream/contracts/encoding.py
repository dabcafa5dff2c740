"""The one encoder of ``RatingChange`` and ``PlayerUpdate`` JSON, in bulk, from columns (every writer, and
``to_json()`` with one row): ``json.dumps(values, separators=(",", ":"), ensure_ascii=False)``'s bytes
(tests hold them equal; phase two accepts a fan-out section only if it equals the stored one byte for
byte), one f-string a row (a dataclass and ``json.dumps`` per player cost ~40 µs on 10,000-player rounds).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import accumulate
from dataclasses import dataclass
from json.encoder import encode_basestring  # C-accelerated, as json.dumps

import numpy as np
import orjson

NULL = "null"


POSITIONAL = (1e-4, 1e16)
"""Where ``repr`` and orjson both write a float (or zero) positionally, the same shortest digits
(a property test); outside, their exponent formats differ (``1e-05`` / ``1e-5``)."""


def number_texts(name: str, values: np.ndarray) -> list[str]:
    """The JSON (and Redis) text of each float, exactly ``repr``'s, NaN and infinities refused; by
    orjson (~10x faster) when every value is :data:`POSITIONAL`, else by ``repr``."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    if not np.isfinite(values).all():
        raise ValueError(f"Out of range float values are not JSON compliant ({name})")
    if not len(values):
        return []
    if _positional(values):
        return _orjson_texts(values)
    return list(map(repr, values.tolist()))


def _positional(values: np.ndarray) -> bool:
    """Whether every value is zero or of a magnitude in :data:`POSITIONAL` (NaN and infinities are
    not), where orjson's text is ``repr``'s."""
    magnitude = np.abs(values)
    return bool((((magnitude >= POSITIONAL[0]) & (magnitude < POSITIONAL[1])) | (values == 0.0)).all())


def _orjson_texts(values: np.ndarray) -> list[str]:
    """The floats' texts rendered by orjson (only where :func:`_positional`)."""
    return orjson.dumps(values, option=orjson.OPT_SERIALIZE_NUMPY)[1:-1].decode().split(",")


def columns_texts(columns: Sequence[tuple[str, np.ndarray]]) -> list[list[str]]:
    """:func:`number_texts` of each (name, values) column in one render over the columns joined (a call's
    fixed cost is most of a few duels' work); column by column when one is not :data:`POSITIONAL`."""
    if len(columns) < 2:
        return [number_texts(name, values) for name, values in columns]
    arrays = [np.asarray(values, dtype=np.float64).ravel() for _, values in columns]
    joined = np.concatenate(arrays)
    if not len(joined):
        return [[] for _ in columns]
    if not _positional(joined):  # NaN and infinities fail the test too
        return [number_texts(name, values) for name, values in columns]
    texts = _orjson_texts(joined)
    bounds = list(accumulate(map(len, arrays), initial=0))
    return [texts[start:end] for start, end in zip(bounds, bounds[1:])]


@dataclass(frozen=True)
class ChangeColumns:
    """One round's rating changes as aligned columns; floats as their text (:func:`number_texts`), shared with
    the Redis writes."""

    ladder: str
    round_id: str
    field_size: int
    occurred_at: float
    players: Sequence[str]
    ranks: Sequence[int]
    performance: Sequence[str]
    mu_before: Sequence[str]
    sigma_before: Sequence[str]
    mu_after: Sequence[str]
    sigma_after: Sequence[str]
    display_rating: Sequence[str]
    tiers: Sequence[str]
    """Tier names; "" (unplaced) is written as ``null`` like ``RatingChange.tier = None``."""
    rounds_played: Sequence[int]
    ranks_text: Sequence[str] | None = None
    """The ranks as JSON text, in place of ``ranks`` (``null``: a correction's change of a player left
    without a round)."""
    teams: Sequence[str | None] | None = None
    """Per row the player's team (None: an individual entry), or None for no row."""
    weights: Sequence[str | None] | None = None
    """Per row the text of the share of the match played (None: a plain round's row, written without ``team``
    and ``weight``); None: every row."""
    placement: Placement | None = None
    """Each tier label's league and division (``partial(league_division, cfg=...)``); None: both null."""
    corrections: Sequence[str] | None = None
    """Per row the id of the correction that made the change (v2); None: every row a round's change."""
    provisional: Sequence[bool] | None = None
    """Per row ``engine.display.is_provisional`` after the change (v5); None: no row says (as before v5)."""


Placement = Callable[[str | None], tuple[str | None, int | None]]
"""A tier label's (league, division)."""


def encode_changes(c: ChangeColumns) -> list[bytes]:
    """``RatingChange(...).to_json().encode()`` for every row of ``c`` (tested byte-equal)."""
    return encode_changes_of_rounds(c.ladder, [c.round_id], [c.field_size], [c.occurred_at], [0] * len(c.players), c)


def encode_changes_of_rounds(ladder: str, round_ids: Sequence[str], field_sizes: Sequence[int | None],
                             occurred_at: Sequence[float], round_of: Sequence[int], c: ChangeColumns) -> list[bytes]:
    """:func:`encode_changes` of rows from many rounds of one ladder (row i from round ``round_of[i]``;
    ``c``'s own round fields unused): a re-rate's history without a call per round."""
    ladder_json = encode_basestring(ladder)
    round_jsons = [encode_basestring(r) for r in round_ids]
    heads = [f',"ladder":{ladder_json},"round_id":{r},"player":' for r in round_jsons]
    # the event id's JSON string from the escaped parts (JSON escapes character by character):
    # ``encode_basestring(event_id(ladder, round_id, player))`` without a second pass per row
    ids = [f'{{"event_id":{ladder_json[:-1]}/{r[1:-1]}/' for r in round_jsons]
    tails = [f',"occurred_at":{json_number(t)}' for t in occurred_at]  # = json.dumps(t, allow_nan=False)
    sizes = [NULL if n is None else repr(int(n)) for n in field_sizes]
    tier_json = {t: encode_basestring(t) if t else NULL for t in set(c.tiers)}
    placed: dict[str, str] = {}  # ``,"league":L,"division":D`` of each distinct tier label (RatingChange v3)
    for tier in set(c.tiers):
        league, division = c.placement(tier or None) if c.placement is not None else (None, None)
        placed[tier] = (f',"league":{NULL if league is None else encode_basestring(league)},'
                        f'"division":{NULL if division is None else repr(int(division))}')
    extras = [""] * len(c.players)
    if c.weights is not None:  # rounds with teams or partial play: "team" and "weight" last (RatingChange v4)
        teams = c.teams if c.teams is not None else [None] * len(c.weights)
        team_json = {t: NULL if t is None else encode_basestring(t) for t in set(teams)}
        extras = ["" if w is None else f',"team":{team_json[t]},"weight":{w}' for t, w in zip(teams, c.weights)]
    players = list(map(encode_basestring, c.players))
    id_tails = [p[1:] for p in players]
    if c.corrections is not None:  # a correction's change: its id ends in the correction's, "kind" after occurred_at
        id_tails = [f'{p[1:-1]}/{encode_basestring(x)[1:]}' for p, x in zip(players, c.corrections)]
        marks = [f',"kind":"correction","correction_id":{encode_basestring(x)}' for x in c.corrections]
        placed_rows = [m + placed[t] for m, t in zip(marks, c.tiers)]
    else:
        placed_rows = [placed[t] for t in c.tiers]
    provs = [""] * len(c.players) if c.provisional is None else [PROVISIONAL[bool(p)] for p in c.provisional]
    ranks = c.ranks_text if c.ranks_text is not None else [repr(int(rank)) for rank in c.ranks]
    rows = zip(round_of, players, id_tails, ranks, c.performance, c.mu_before, c.sigma_before,
               c.mu_after, c.sigma_after, c.display_rating, c.tiers, c.rounds_played, placed_rows, extras, provs)
    return [
        (f'{ids[k]}{id_tail}{heads[k]}'
         f'{player_json},"rank":{rank},"field_size":{sizes[k]},"performance":{perf},'
         f'"mu_before":{mu0},"sigma_before":{sig0},"mu_after":{mu1},"sigma_after":{sig1},'
         f'"display_rating":{shown},"tier":{tier_json[tier]},"rounds_played":{int(played)!r}{tails[k]}'
         f'{placed_}{extra}{mark}}}').encode()
        for k, player_json, id_tail, rank, perf, mu0, sig0, mu1, sig1, shown, tier, played, placed_, extra, mark in rows
    ]


PROVISIONAL = {True: ',"provisional":true', False: ',"provisional":false'}
"""The ``provisional`` member of a RatingChange (v5), last in the object as ``to_json`` writes it."""


def json_number(value: float) -> str:
    """A JSON number as ``json.dumps`` writes it (``float.__repr__`` / ``int.__repr__``), NaN and
    infinities refused (ValueError, as ``json.dumps(allow_nan=False)``)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"Out of range float values are not JSON compliant: {value!r}")
        return float.__repr__(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int.__repr__(value)
    raise TypeError(f"not a JSON number: {value!r}")


def update_head(ladder: str, round_id: str, seq: int, occurred_at: float, weight: float, field_size: int) -> str:
    """The round's fields of a PlayerUpdate's JSON, up to its entries (shared by a round's sections)."""
    return (f'{{"ladder":{encode_basestring(ladder)},"round_id":{encode_basestring(round_id)},'
            f'"seq":{int(seq)!r},"occurred_at":{json_number(occurred_at)},'
            f'"weight":{json_number(weight)},"field_size":{int(field_size)!r},"entries":[')


def join_entries(head: str, entries: Sequence[str]) -> bytes:
    """A PlayerUpdate's JSON from its :func:`update_head` and its entries' texts (:func:`entry_texts`)."""
    return f'{head}{",".join(entries)}]}}'.encode()


def entry_texts(players: Sequence[str], ranks: Sequence[int], performance_texts: Sequence[str],
                previous_seqs: Sequence[int] | None,
                ratings: tuple[Sequence[str], Sequence[str]] | None = None,
                teams: Sequence[str | None] | None = None, weight_texts: Sequence[str] | None = None) -> list[str]:
    """The JSON text of each entry of a PlayerUpdate (joined by :func:`join_entries`); ``ratings``: the texts
    of ``mu_after`` and ``sigma_after``; with ``weight_texts`` each entry ends with its ``team`` and ``weight``."""
    if ratings is not None or weight_texts is not None:
        n = len(players)
        previous = [""] * n if previous_seqs is None else [f',"previous_seq":{int(q)!r}' for q in previous_seqs]
        rated = [""] * n if ratings is None else [f',"mu_after":{mu},"sigma_after":{sigma}'
                                                  for mu, sigma in zip(*ratings)]
        if weight_texts is None:
            shared = [""] * n
        else:
            names: Sequence[str | None] = [None] * n if teams is None else teams
            team_json = {t: "" if t is None else f',"team":{encode_basestring(t)}' for t in set(names)}
            shared = [f'{team_json[t]},"weight":{w}' for t, w in zip(names, weight_texts)]
        return [f'{{"player":{encode_basestring(player)},"rank":{int(rank)!r},"performance":{perf}{q}{r}{x}}}'
                for player, rank, perf, q, r, x in zip(players, ranks, performance_texts, previous, rated, shared)]
    if previous_seqs is None:
        return [f'{{"player":{encode_basestring(player)},"rank":{int(rank)!r},"performance":{perf}}}'
                for player, rank, perf in zip(players, ranks, performance_texts)]
    return [f'{{"player":{encode_basestring(player)},"rank":{int(rank)!r},"performance":{perf},'
            f'"previous_seq":{int(previous)!r}}}'
            for player, rank, perf, previous in zip(players, ranks, performance_texts, previous_seqs)]
