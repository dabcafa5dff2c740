"""The player hash schema (stream/store/player_hash.py) against the Lua scripts that name its fields
literally, and its views against the schema."""

from __future__ import annotations

import re
from pathlib import Path
from importlib import resources

import pytest

from stream.store import player_hash
from stream.store.scripts import SCRIPT_NAMES

HASH_CALL = re.compile(r"redis\.call\(\s*'(H[A-Z]+)'\s*,\s*([^,()]+)((?:,\s*[^,()]+)*)\)")
LITERAL = re.compile(r"^'([a-z_]+)'$")


def _text(name: str) -> str:
    return resources.files("stream.store.scripts").joinpath(f"{name}.lua").read_text(encoding="utf-8")


def _player_scripts() -> list[str]:
    """Scripts that take a player hash (their KEYS header names ``ems:player:``)."""
    names = [p.name[:-4] for p in resources.files("stream.store.scripts").iterdir() if p.name.endswith(".lua")]
    return sorted(n for n in names if "ems:player:" in _text(n))


def _literal_fields(name: str) -> set[str]:
    """The quoted field names of the script's hash commands (HGET, HMGET, HSET, HDEL, ...): every
    literal argument after the key, values included (a literal value would also have to be a field)."""
    found: set[str] = set()
    for _, _, rest in HASH_CALL.findall(_text(name)):
        for arg in (a.strip() for a in rest.split(",") if a.strip()):
            if (m := LITERAL.match(arg)) is not None:
                found.add(m.group(1))
    return found


def test_player_scripts_are_found() -> None:
    scripts = _player_scripts()
    assert {"apply_player_update", "mark_queued", "release_queued", "load_players", "hset_many"} <= set(scripts)
    assert set(scripts) <= {*SCRIPT_NAMES, "mm_unpool"}


@pytest.mark.parametrize("script", _player_scripts())
def test_lua_field_names_are_in_the_schema(script: str) -> None:
    assert _literal_fields(script) <= set(player_hash.FIELDS), script


def test_apply_player_update_writes_what_a_bulk_write_writes() -> None:
    """A bulk write (backfill, re-rate) leaves the hash the stream leaves: apply_player_update.lua's
    fields and mark_queued.lua's queued_seq."""
    assert _literal_fields("apply_player_update") | {player_hash.QUEUED_SEQ} == set(player_hash.WRITE_FIELDS)
    assert _literal_fields("mark_queued") == {player_hash.QUEUED_SEQ, player_hash.LAST_SEQ, player_hash.QUEUED_PREV,
                                             player_hash.QUEUED_OLDER}


@pytest.mark.parametrize("view", ["WRITE_FIELDS", "BARRIER", "PRIORS", "PRIOR_STATES", "STATES", "STATES_QUEUED",
                                  "READ_STATES", "RATING", "VIEW", "ELIGIBILITY", "PROGRESS"])
def test_views_name_schema_fields(view: str) -> None:
    names = [name.removeprefix("#") for name in getattr(player_hash, view)]
    assert names and set(names) <= set(player_hash.FIELDS)
    assert len(set(names)) == len(names)


def test_player_rows_follow_the_write_fields() -> None:
    rows = player_hash.PlayerRows(seq=[7, 9], mu=["1.5", "2.5"], sigma=["3.0", "4.0"], rounds=[1, 2],
                                  last_round=["r1", "r2"], last_time=["10.0", "11.0"],
                                  display_rating=["100.0", "200.0"], tier=["", "gold"], state=[b"a", b"b"]).rows()
    assert [dict(zip(player_hash.WRITE_FIELDS, row)) for row in rows][1] == {
        "last_seq": 9, "queued_seq": 9, "mu": "2.5", "sigma": "4.0", "rounds": 2, "last_round": "r2",
        "last_time": "11.0", "display_rating": "200.0", "tier": "gold", "state": b"b"}


PYTHON_HASH_CALL = re.compile(r"\.(hget|hmget|hset|hdel|hincrby)\(\s*keys\.player\((.*)")


def test_python_readers_and_writers_name_fields_through_the_schema() -> None:
    """Every HGET/HMGET/HSET/HDEL of a player hash in stream/ names its fields by the schema's
    constants and views, never by a literal: a field is renamed in one place."""
    root = Path(__file__).resolve().parents[2] / "stream"
    calls = []
    for path in root.rglob("*.py"):
        if path.name == "player_hash.py":  # its reader (player_hash.read) takes the names its callers give
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if (m := PYTHON_HASH_CALL.search(line)) is not None:
                calls.append((f"{path.relative_to(root)}:{number}", m.group(2)))
    assert len(calls) >= 6  # the store's reads besides player_hash.read (queries, erase, store)
    literal = [(where, rest) for where, rest in calls if re.search(r"""["'][a-z_]+["']""", rest)]
    assert not literal, literal
    assert all("player_hash." in rest for _, rest in calls), calls
