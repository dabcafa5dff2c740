"""Settings.from_env: every bad value is reported (variable, value, what is expected), all at once;
every command refuses to start on one with exit code 2 and no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import Field, fields
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from stream.cli.main import app
from stream.pipeline.runtime.worker import FAUST_LOG_LEVELS
from stream.settings import FALSE_WORDS, LOG_LEVELS, TRUE_WORDS, Settings, SettingsError, StackChoiceError

FIELDS = {f.metadata["env"]: f for f in fields(Settings)}
NUMERIC = [f for f in fields(Settings) if f.type in ("int", "float")]
BOOLEAN = [f for f in fields(Settings) if f.type == "bool"]
CHOICE = [f for f in fields(Settings) if "choices" in f.metadata]


def problems(environ: dict[str, str]) -> tuple[str, ...]:
    with pytest.raises(SettingsError) as info:
        Settings.from_env(environ)
    return info.value.problems


@pytest.mark.parametrize(("name", "raw", "expected"), [
    ("PHASE_ONE_BATCH", "abc", "PHASE_ONE_BATCH='abc': expected a whole number >= 1"),
    ("PHASE_ONE_BATCH", "1.5", "PHASE_ONE_BATCH='1.5': expected a whole number >= 1"),
    ("PHASE_ONE_BATCH", "", "PHASE_ONE_BATCH='': expected a whole number >= 1"),
    ("PHASE_ONE_BATCH", "0", "PHASE_ONE_BATCH='0': expected a whole number >= 1"),
    ("PHASE_ONE_LEASE_MS", "99", "PHASE_ONE_LEASE_MS='99': expected a whole number >= 100"),
    ("PHASE_ONE_LEASE_MS", "5s", "PHASE_ONE_LEASE_MS='5s': expected a whole number >= 100"),
    ("STREAM_BUFFER_MAXSIZE", "-5", "STREAM_BUFFER_MAXSIZE='-5': expected a whole number >= 1"),
    ("WEB_PORT", "0", "WEB_PORT='0': expected a whole number from 1 to 65535"),
    ("WEB_PORT", "65536", "WEB_PORT='65536': expected a whole number from 1 to 65535"),
    ("REDIS_KEEPALIVE_S", "-1", "REDIS_KEEPALIVE_S='-1': expected a whole number >= 0"),
    ("SWEEP_TIMEOUT_S", "soon", "SWEEP_TIMEOUT_S='soon': expected a number > 0"),
    ("SWEEP_TIMEOUT_S", "0", "SWEEP_TIMEOUT_S='0': expected a number > 0"),
    ("MIN_WEIGHT", "nan", "MIN_WEIGHT='nan': expected a number > 0"),
    ("STALL_TIMEOUT_S", "inf", "STALL_TIMEOUT_S='inf': expected a number > 0"),
    ("REDIS_SOCKET_TIMEOUT_S", "-0.5", "REDIS_SOCKET_TIMEOUT_S='-0.5': expected a number >= 0"),
    ("STALL_EXIT", "maybe", "STALL_EXIT='maybe': expected one of 1, true, yes, on (true) or 0, false, no, off (false)"),
    ("STRICT_SCHEMA", "", "STRICT_SCHEMA='': expected one of 1, true, yes, on (true) or 0, false, no, off (false)"),
    ("LOG_LEVEL", "verbose", "LOG_LEVEL='verbose': expected one of critical, error, warning, warn, info, debug (any case)"),
    ("KAFKA_SECURITY_PROTOCOL", "TLS", "KAFKA_SECURITY_PROTOCOL='TLS': expected one of PLAINTEXT, SSL, SASL_PLAINTEXT, "
                                       "SASL_SSL (any case)"),
    ("KAFKA_SASL_MECHANISM", "GSSAPI", "KAFKA_SASL_MECHANISM='GSSAPI': expected one of PLAIN, SCRAM-SHA-256, "
                                       "SCRAM-SHA-512 (any case)"),
])
def test_a_bad_value_names_the_variable_the_value_and_what_is_expected(name: str, raw: str, expected: str) -> None:
    assert problems({name: raw}) == (expected,)


def test_every_bad_setting_is_reported_at_once_in_field_order() -> None:
    found = problems({"STALL_EXIT": "maybe", "PHASE_ONE_BATCH": "abc", "WEB_PORT": "-1", "PARTITIONS": "4",
                      "SWEEP_TIMEOUT_S": "x"})
    assert [p.split("=")[0] for p in found] == ["WEB_PORT", "SWEEP_TIMEOUT_S", "PHASE_ONE_BATCH", "STALL_EXIT"]
    assert str(SettingsError(*found)) == "; ".join(found)


def test_edge_values_and_blanks_are_accepted() -> None:
    s = Settings.from_env({"PHASE_ONE_BATCH": " 1 ", "WEB_PORT": "65535", "REDIS_SOCKET_TIMEOUT_S": "0",
                           "SWEEP_TIMEOUT_S": "1e-9", "PHASE_ONE_CACHE_PLAYERS": "0", "STALL_EXIT": " OFF ",
                           "STRICT_SCHEMA": "Yes", "MIN_WEIGHT": "5e-324", "MAX_ROUND_SIZE": "1_000"})
    assert (s.phase_one_batch, s.web_port, s.redis_socket_timeout_s, s.sweep_timeout_s) == (1, 65535, 0.0, 1e-9)
    assert (s.phase_one_cache_players, s.stall_exit, s.strict_schema) == (0, False, True)
    assert (s.min_weight, s.max_round_size) == (5e-324, 1000)
    assert Settings.from_env({}) == Settings()  # nothing set: the defaults


@given(st.sampled_from(CHOICE), st.data())
def test_a_word_setting_takes_its_words_in_any_case_and_nothing_else(f: Field[Any], data: st.DataObject) -> None:
    """A text setting with ``choices`` reads any case of one of them (blanks around it dropped) and
    refuses any other text."""
    word = data.draw(st.sampled_from(f.metadata["choices"]))
    cased = "".join(c.upper() if data.draw(st.booleans()) else c.lower() for c in word)
    assert getattr(Settings.from_env({f.metadata["env"]: f" {cased} "}), f.name) == cased
    other = data.draw(st.text(max_size=12))
    if other.strip().lower() not in (c.lower() for c in f.metadata["choices"]):
        assert len(problems({f.metadata["env"]: other})) == 1


def test_every_log_level_word_has_a_faust_level() -> None:
    assert set(FAUST_LOG_LEVELS) == set(LOG_LEVELS)


def test_every_default_is_within_its_declared_bounds() -> None:
    """The bounds live in each field's metadata: every number has one, and its default meets it."""
    for f in NUMERIC:
        assert "min" in f.metadata or "above" in f.metadata, f.name
        assert Settings.from_env({f.metadata["env"]: str(f.default)}) == Settings(), f.name
    for f in CHOICE:
        assert f.default in f.metadata["choices"], f.name


def test_a_stack_choice_is_a_settings_error() -> None:
    """Several running stacks and no STACK_NAME: the same error type, so the same exit code 2."""
    assert issubclass(StackChoiceError, SettingsError)


def _valid_numbers(f: Field[Any]) -> st.SearchStrategy[int | float]:
    low, above, high = f.metadata.get("min"), f.metadata.get("above"), f.metadata.get("max")
    if f.type == "int":
        return st.integers(min_value=low if low is not None else above + 1, max_value=high)
    return st.floats(min_value=low if low is not None else above, max_value=high,
                     exclude_min=low is None, allow_nan=False, allow_infinity=False)


@given(st.data())
def test_any_valid_value_round_trips(data: st.DataObject) -> None:
    """Whatever a number field accepts reads back as that number; any case of a boolean word as its bool."""
    f = data.draw(st.sampled_from(NUMERIC))
    value = data.draw(_valid_numbers(f))
    assert getattr(Settings.from_env({f.metadata["env"]: repr(value)}), f.name) == value
    flag = data.draw(st.sampled_from(BOOLEAN))
    word = data.draw(st.sampled_from(TRUE_WORDS + FALSE_WORDS))
    cased = "".join(c.upper() if up else c for c, up in zip(word, data.draw(st.lists(st.booleans(), min_size=len(word), max_size=len(word)))))
    assert getattr(Settings.from_env({flag.metadata["env"]: cased}), flag.name) is (word in TRUE_WORDS)


@given(st.sampled_from(NUMERIC), st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8))
def test_any_out_of_bounds_or_garbage_value_is_refused(f: Field[Any], value: float | str) -> None:
    """A value is either read as a number within the field's bounds, or reported; never a traceback."""
    raw = value if isinstance(value, str) else repr(value)
    try:
        read = getattr(Settings.from_env({f.metadata["env"]: raw}), f.name)
    except SettingsError as exc:
        assert exc.problems == (f"{f.metadata['env']}={raw!r}: expected {exc.problems[0].split(': expected ')[1]}",)
        return
    low, above, high = f.metadata.get("min"), f.metadata.get("above"), f.metadata.get("max")
    assert (low is None or read >= low) and (above is None or read > above) and (high is None or read <= high)


BAD = {"PHASE_ONE_BATCH": "abc", "STALL_EXIT": "maybe", "WEB_PORT": "0"}
EXPECTED = ["error: configuration: WEB_PORT='0': expected a whole number from 1 to 65535",
            "error: configuration: PHASE_ONE_BATCH='abc': expected a whole number >= 1",
            "error: configuration: STALL_EXIT='maybe': expected one of 1, true, yes, on (true) or 0, false, no, off (false)"]


def test_the_stream_command_refuses_a_bad_setting_with_exit_2_and_no_traceback(tmp_path: Path) -> None:
    """Through the real entry point (``python -m stream``), as a user runs it."""
    env = {**os.environ, **BAD, "KAFKA_BOOTSTRAP": "127.0.0.1:1", "REDIS_URL": "redis://127.0.0.1:1/0",
           "XDG_CACHE_HOME": str(tmp_path)}
    for command in (["worker", "--no-web"], ["stack"]):
        done = subprocess.run([sys.executable, "-m", "stream", *command], env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 2, (command, done.stderr)
        assert done.stderr.splitlines() == EXPECTED, command
        assert "Traceback" not in done.stderr + done.stdout


def test_every_command_that_reads_settings_refuses_a_bad_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name, value in {**BAD, "KAFKA_BOOTSTRAP": "127.0.0.1:1", "REDIS_URL": "redis://127.0.0.1:1/0",
                        "XDG_CACHE_HOME": str(tmp_path), "ERASURE_SECRET": "s"}.items():
        monkeypatch.setenv(name, value)
    rounds = tmp_path / "rounds.jsonl"
    rounds.write_text("")
    amended = tmp_path / "round.json"
    amended.write_text("{}")
    commands = [["worker", "--no-web"], ["api"], ["stack"], ["publish", str(rounds)], ["tail"], ["rejected"],
                ["replay", str(rounds), "--output", str(tmp_path / "out.csv")], ["evaluate", str(rounds)],
                ["tune", str(rounds), "--model", "elo-multiplayer"], ["leaderboard", "l"], ["player", "l", "p"],
                ["round", "l", "r"], ["backfill", str(rounds)], ["export", "l", "--output", str(tmp_path / "x.jsonl")],
                ["import", str(rounds)], ["erase", "l", "p"], ["void", "l", "r"], ["amend", str(amended)]]
    for command in commands:
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2, (command, result.output)
        assert result.output.splitlines() == EXPECTED, command
        assert "Traceback" not in result.output
