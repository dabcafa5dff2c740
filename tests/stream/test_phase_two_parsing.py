"""Phase two's parsing of ``player-updates`` sections: ``PlayerUpdate.from_json``'s one-pass reading
equals a column per field (the reference below), and raises wherever it raises; grouping a batch's
sections per round reads the same rows as taking each section's entries one by one."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.contracts import PlayerUpdate
from stream.pipeline.chains import NO_PREVIOUS
from stream.pipeline.phase_two import _Rows, group_updates
from tests.contracts.wire_oracle import entries as update_entries

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False), st.text(max_size=3))
OPTIONAL = ("previous_seq", "mu_after", "sigma_after", "team", "weight")


@st.composite
def entries(draw: st.DrawFn) -> Any:
    """An entry as orjson could hand it over: usually a well-formed one (with some of the optional
    fields), sometimes one with a field missing, or not an object at all."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.one_of(SCALARS, st.lists(SCALARS, max_size=2)))
    entry: dict[str, Any] = {"player": draw(st.sampled_from(["a", "b", "c"])), "rank": draw(st.integers(1, 3)),
                             "performance": draw(st.floats(-1e4, 1e4))}
    for name in OPTIONAL:
        if draw(st.integers(0, 3)) == 0:
            entry[name] = draw(st.one_of(st.none(), st.integers(0, 9), st.floats(0, 1), st.text(max_size=2)))
    if draw(st.integers(0, 15)) == 0:
        del entry[draw(st.sampled_from(sorted(entry)))]
    return entry


@st.composite
def sections(draw: st.DrawFn) -> Any:
    data: dict[str, Any] = {"ladder": "L", "round_id": draw(st.sampled_from(["r1", "r2"])),
                            "seq": draw(st.integers(1, 3)), "occurred_at": 1.0, "weight": 1.0, "field_size": 3,
                            "entries": draw(st.one_of(st.lists(entries(), max_size=4), SCALARS))}
    if draw(st.integers(0, 15)) == 0:
        del data[draw(st.sampled_from(sorted(data)))]
    return data


def outcome(parse: Any, data: dict[str, Any]) -> Any:
    try:
        return parse(data)
    except Exception:  # noqa: BLE001 - which exception does not matter: the section is malformed either way
        return "raises"


def reference(data: dict[str, Any]) -> PlayerUpdate:
    """A section read a column per field, each optional column None unless every entry has it
    (weights: unless some entry has it, 1 where absent)."""
    entries = data["entries"]
    previous = [e.get("previous_seq") for e in entries]
    mu_after = [e.get("mu_after") for e in entries]
    sigma_after = [e.get("sigma_after") for e in entries]
    weights = [e.get("weight") for e in entries]
    teams = [e.get("team") for e in entries]
    return PlayerUpdate(
        ladder=data["ladder"], round_id=data["round_id"], seq=data["seq"],
        occurred_at=data["occurred_at"], weight=data["weight"], field_size=data["field_size"],
        players=[e["player"] for e in entries], ranks=[e["rank"] for e in entries],
        performances=[e["performance"] for e in entries],
        previous_seqs=None if None in previous else previous,
        mu_after=None if None in mu_after else mu_after, sigma_after=None if None in sigma_after else sigma_after,
        teams=None if all(t is None for t in teams) else teams,
        weights=None if all(w is None for w in weights) else [1.0 if w is None else w for w in weights])


@settings(max_examples=400, deadline=None)
@given(sections())
def test_reading_a_section_equals_the_column_per_field_reading(data: dict[str, Any]) -> None:
    assert outcome(PlayerUpdate.from_json, data) == outcome(reference, data)
    text = json.dumps(data)
    assert outcome(PlayerUpdate.from_json, text) == outcome(PlayerUpdate.from_json, data)


def test_text_orjson_refuses_is_read_by_the_standard_decoder() -> None:
    """NaN and huge integers (orjson refuses them) parse as ``json.loads`` reads them."""
    text = ('{"ladder":"L","round_id":"r","seq":99999999999999999999999,"occurred_at":NaN,"weight":1.0,'
            '"field_size":2,"entries":[{"player":"a","rank":1,"performance":1.5}]}')
    update = PlayerUpdate.from_json(text.encode())
    assert update.seq == 99999999999999999999999 and math.isnan(update.occurred_at) and update.players == ["a"]


def one_by_one(updates: list[PlayerUpdate]) -> list[tuple[str, str, str, int, float, int, float]]:
    """Each round's rows taking the sections' entries one at a time, a player's first entry kept."""
    rounds: dict[tuple[str, str], list[tuple[str, str, str, int, float, int, float]]] = {}
    seq = {}
    for u in updates:
        rows = rounds.setdefault((u.ladder, u.round_id), [])
        seq.setdefault((u.ladder, u.round_id), u.seq)
        for i, entry in enumerate(update_entries(u)):
            if all(row[2] != entry.player for row in rows):
                share = 1.0 if entry.weight is None else entry.weight
                rows.append((u.ladder, u.round_id, entry.player, entry.rank, entry.performance,
                             NO_PREVIOUS if entry.previous_seq is None else entry.previous_seq, u.weight * share))
    order = sorted(rounds, key=lambda key: (key[0], seq[key]))
    return [row for key in order for row in rounds[key]]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.builds(
    lambda round_id, players, teamed, previous: PlayerUpdate(
        "L", round_id, int(round_id[1:]), 1.0, 0.5, 3, players, [1] * len(players), [10.0 * i for i in range(len(players))],
        [previous] * len(players) if previous else None, None, None,
        ["t"] * len(players) if teamed else None, [0.25] * len(players) if teamed else None),
    st.sampled_from(["r1", "r2", "r3"]), st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=4),
    st.booleans(), st.integers(0, 2)), max_size=6))
def test_grouped_rows_equal_the_entries_one_by_one(updates: list[PlayerUpdate]) -> None:
    rounds = group_updates(updates)
    key_of = {(u.ladder, p): i for i, (u, p) in enumerate((u, p) for u in updates for p in u.players)}
    rows = _Rows.of(rounds, key_of)
    got = list(zip(["L"] * len(rows.players), [rows.rounds[i].update.round_id
                                                for i in np.repeat(np.arange(len(rows.rounds)),
                                                                   np.diff(rows.starts))],
                   rows.players, rows.ranks, rows.performance.tolist(), rows.previous.tolist(), rows.weight.tolist()))
    assert got == one_by_one(updates)
    assert np.isnan(rows.mu_after).all() and np.isnan(rows.sigma_after).all()
