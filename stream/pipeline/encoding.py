"""RatingChange events (and PlayerUpdate fan-outs) of a whole round encoded in bulk, from columns.

Phase two emits one ``RatingChange`` per player; building a dataclass and calling ``json.dumps``
per player cost ~40 µs each on 10,000-player rounds. :func:`encode_changes` writes the same
bytes as ``RatingChange(...).to_json().encode()`` (same keys, order, float ``repr``, string
escaping with ``ensure_ascii=False``, NaN and infinities refused), one f-string per row; the
round's shared fields are encoded once.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring  # C-accelerated, as json.dumps

import numpy as np
import orjson

from stream.contracts.events import PlayerUpdate
from stream.engine.display import DisplayConfig, league_division

NULL = "null"


POSITIONAL = (1e-4, 1e16)
"""``repr`` writes a float of magnitude in [1e-4, 1e16) (or zero) in positional notation, as
orjson does: there both write the same shortest round-trip digits (checked by a property test);
outside, their exponent formats differ (``1e-05`` / ``1e-5``)."""


def number_texts(name: str, values: np.ndarray) -> list[str]:
    """The JSON (and Redis) text of each float: exactly ``repr``, as ``json.dumps`` writes it;
    NaN and infinities refused like ``RatingChange.to_json()`` does. Rendered by orjson (Ryu,
    ~10x faster than ``repr``, ~0.7 µs a float here) when every value is in the range where
    the two texts are identical, else by ``repr``."""
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
    """:func:`number_texts` of each (name, values) column, the same texts, rendered by one call
    over the columns joined: a batch of a few duels has a handful of floats per column, and each
    call's fixed cost (its checks, the render, the split) is most of the work. Columns with a
    value outside the range both renderers agree on, or not finite, are rendered column by
    column (so an error names its column as :func:`number_texts` does)."""
    if len(columns) < 2:
        return [number_texts(name, values) for name, values in columns]
    arrays = [np.asarray(values, dtype=np.float64).ravel() for _, values in columns]
    joined = np.concatenate(arrays)
    if not len(joined):
        return [[] for _ in columns]
    if not _positional(joined):  # NaN and infinities fail the test too
        return [number_texts(name, values) for name, values in columns]
    texts = _orjson_texts(joined)
    out = []
    start = 0
    for values in arrays:
        out.append(texts[start:start + len(values)])
        start += len(values)
    return out


@dataclass(frozen=True)
class ChangeColumns:
    """One round's rating changes as aligned columns (one entry per player); the float columns
    as their text (:func:`number_texts`), rendered once and shared with the Redis writes."""

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
    teams: Sequence[str | None] | None = None
    """Per row the player's team (None: an individual entry), or None for no row."""
    weights: Sequence[str | None] | None = None
    """Per row the text of the share of the match played, None for a row of a plain round (its
    event has neither ``team`` nor ``weight``, as ``RatingChange.weight = None``); None: every row."""
    display: DisplayConfig | None = None
    """The ladder's display config: each tier label's league and division (None: both null)."""
    provisional: Sequence[bool] | None = None
    """Per row whether the rating is provisional after the change (``engine.display.is_provisional``;
    RatingChange v5, written last); None: no row says (an event as written before v5)."""


def placement_json(tiers: Sequence[str], display: DisplayConfig | None) -> dict[str, str]:
    """``,"league":L,"division":D`` of each distinct tier label (RatingChange v3)."""
    out = {}
    for tier in set(tiers):
        league, division = league_division(tier or None, display) if display is not None else (None, None)
        out[tier] = (f',"league":{NULL if league is None else encode_basestring(league)},'
                     f'"division":{NULL if division is None else repr(int(division))}')
    return out


def encode_changes(c: ChangeColumns) -> list[bytes]:
    """``RatingChange(...).to_json().encode()`` for every row of ``c`` (tested byte-equal)."""
    return encode_changes_of_rounds(c.ladder, [c.round_id], [c.field_size], [c.occurred_at], [0] * len(c.players), c)


def encode_changes_of_rounds(ladder: str, round_ids: Sequence[str], field_sizes: Sequence[int],
                             occurred_at: Sequence[float], round_of: Sequence[int], c: ChangeColumns) -> list[bytes]:
    """:func:`encode_changes` of rows from many rounds of one ladder (row i from round
    ``round_of[i]``; ``c``'s own round fields unused): a re-rate encodes a long history's changes
    without a call per round."""
    ladder_json = encode_basestring(ladder)
    round_jsons = [encode_basestring(r) for r in round_ids]
    heads = [f',"ladder":{ladder_json},"round_id":{r},"player":' for r in round_jsons]
    # the event id's JSON string from the escaped parts (JSON escapes character by character):
    # ``encode_basestring(event_id(ladder, round_id, player))`` without a second pass per row
    ids = [f'{{"event_id":{ladder_json[:-1]}/{r[1:-1]}/' for r in round_jsons]
    tails = [f',"occurred_at":{_number(t)}' for t in occurred_at]  # = json.dumps(t, allow_nan=False)
    sizes = [repr(int(n)) for n in field_sizes]
    tier_json = {t: encode_basestring(t) if t else NULL for t in set(c.tiers)}
    placed = placement_json(c.tiers, c.display)
    extras = [""] * len(c.players)
    if c.weights is not None:  # rounds with teams or partial play: "team" and "weight" last (RatingChange v4)
        teams = c.teams if c.teams is not None else [None] * len(c.weights)
        team_json = {t: NULL if t is None else encode_basestring(t) for t in set(teams)}
        extras = ["" if w is None else f',"team":{team_json[t]},"weight":{w}' for t, w in zip(teams, c.weights)]
    marks = [""] * len(c.players) if c.provisional is None else [PROVISIONAL[bool(p)] for p in c.provisional]
    rows = zip(round_of, map(encode_basestring, c.players), c.ranks, c.performance, c.mu_before, c.sigma_before,
               c.mu_after, c.sigma_after, c.display_rating, c.tiers, c.rounds_played, extras, marks)
    return [
        (f'{ids[k]}{player_json[1:]}{heads[k]}'
         f'{player_json},"rank":{int(rank)!r},"field_size":{sizes[k]},"performance":{perf},'
         f'"mu_before":{mu0},"sigma_before":{sig0},"mu_after":{mu1},"sigma_after":{sig1},'
         f'"display_rating":{shown},"tier":{tier_json[tier]},"rounds_played":{int(played)!r}{tails[k]}'
         f'{placed[tier]}{extra}{mark}}}').encode()
        for k, player_json, rank, perf, mu0, sig0, mu1, sig1, shown, tier, played, extra, mark in rows
    ]


PROVISIONAL = {True: ',"provisional":true', False: ',"provisional":false'}
"""The ``provisional`` member of a RatingChange (v5), last in the object as ``to_json`` writes it."""


def _number(value: float) -> str:
    """A JSON number as ``json.dumps`` writes it (``repr``), NaN and infinities refused."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"Out of range float values are not JSON compliant: {value!r}")
    return repr(value)


def encode_update(update: PlayerUpdate, performance_texts: Sequence[str]) -> bytes:
    """``update.to_json().encode()`` with the entries written from columns, the performances
    given as their text (:func:`number_texts`) (tested byte-equal)."""
    head = update_head(update.ladder, update.round_id, update.seq, update.occurred_at, update.weight,
                       update.field_size)
    weights = None if update.weights is None else number_texts("weight", np.asarray(update.weights, dtype=float))
    ratings = None if update.mu_after is None or update.sigma_after is None else (
        number_texts("mu_after", np.asarray(update.mu_after, dtype=float)),
        number_texts("sigma_after", np.asarray(update.sigma_after, dtype=float)))
    return encode_entries(head, update.players, update.ranks, performance_texts, update.previous_seqs, ratings,
                          update.teams, weights)


def update_head(ladder: str, round_id: str, seq: int, occurred_at: float, weight: float, field_size: int) -> str:
    """The round's fields of a PlayerUpdate's JSON, up to its entries (shared by a round's sections)."""
    return (f'{{"ladder":{encode_basestring(ladder)},"round_id":{encode_basestring(round_id)},'
            f'"seq":{int(seq)!r},"occurred_at":{_number(occurred_at)},'
            f'"weight":{_number(weight)},"field_size":{int(field_size)!r},"entries":[')


def encode_entries(head: str, players: Sequence[str], ranks: Sequence[int], performance_texts: Sequence[str],
                   previous_seqs: Sequence[int] | None,
                   ratings: tuple[Sequence[str], Sequence[str]] | None = None,
                   teams: Sequence[str | None] | None = None, weight_texts: Sequence[str] | None = None) -> bytes:
    """A PlayerUpdate's JSON from its :func:`update_head` and its entries as columns;
    ``ratings``: the texts of each entry's ``mu_after`` and ``sigma_after`` (a rating-only
    model's round, which sets ``previous_seqs`` too); ``weight_texts`` (a round with teams or
    partial play): each entry then ends with its ``team`` (if any) and ``weight``, as
    ``PlayerUpdate.to_json()`` writes them."""
    entries = entry_texts(players, ranks, performance_texts, previous_seqs, ratings, teams, weight_texts)
    return join_entries(head, entries)


def join_entries(head: str, entries: Sequence[str]) -> bytes:
    """A PlayerUpdate's JSON from its :func:`update_head` and its entries' texts
    (:func:`entry_texts`): what :func:`encode_entries` writes of those entries."""
    return f'{head}{",".join(entries)}]}}'.encode()


def entry_texts(players: Sequence[str], ranks: Sequence[int], performance_texts: Sequence[str],
                previous_seqs: Sequence[int] | None,
                ratings: tuple[Sequence[str], Sequence[str]] | None = None,
                teams: Sequence[str | None] | None = None, weight_texts: Sequence[str] | None = None) -> list[str]:
    """The JSON text of each entry of a PlayerUpdate (arguments as :func:`encode_entries`):
    rendered once per participation, then joined per message (:func:`join_entries`), so a
    batch's rounds are written in one pass and a split message's parts re-use the texts."""
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
