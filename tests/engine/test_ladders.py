"""``LADDERS`` resolved per ladder (stream/engine/ladders.py): models, parameters, display, the
``"*"`` fallback, the ENGINE_PRESET / DISPLAY_CONFIG shorthands, and errors naming the bad key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stream.cli.main import app
from stream.engine import PRESETS
from stream.engine.display import DisplayConfig
from stream.engine.glicko import GlickoParams
from stream.engine.ladders import LaddersError, parse_ladders
from stream.engine.models import MODELS
from stream.pipeline.context import load_ladders
from stream.settings import Settings

TIERS = {"tiers": [["Bronze", None], ["Gold", 1600.0]]}


def test_empty_is_engine_preset_with_display_defaults() -> None:
    ladders = parse_ladders("")
    cfg = ladders.of("anything")
    assert cfg.model == "mmr-bounded" and cfg.params == PRESETS["mmr-bounded"] and cfg.display == DisplayConfig()
    assert cfg.rating_model is None and cfg.elo_mmr is PRESETS["mmr-bounded"]


def test_shorthands_engine_preset_and_display_config() -> None:
    display = json.dumps({"*": {"k": 3.0}, "x": TIERS})
    ladders = parse_ladders("", engine_preset="mmx", display_config=display)
    assert ladders.of("y").model == "mmx" and ladders.of("y").display.k == 3.0
    assert ladders.of("x").model == "mmx" and ladders.of("x").display == DisplayConfig.from_dict(TIERS)
    # the settings' own resolution is the same function
    settings = Settings.from_env({"ENGINE_PRESET": "mmx", "DISPLAY_CONFIG": display})
    assert load_ladders(settings) == ladders


def test_entries_models_params_and_fallbacks() -> None:
    raw = json.dumps({
        "a": {"model": "mmr", "params": {"weight_limit": 0.31, "sig_limit": 71.9, "rho": 1.0}},
        "b": {"model": "glicko", "params": {"beta": 200.0}},
        "c": {"model": "trueskill", "display": {"mode": "mu"}},
        "d": {"display": TIERS},
        "*": {"model": "codeforces"},
    })
    ladders = parse_ladders(raw, display_config=json.dumps({"c": {"k": 1.0}, "e": {"k": 4.0}}))
    a, b, c, d = (ladders.of(x) for x in "abcd")
    assert a.elo_mmr == PRESETS["mmr"].with_(weight_limit=0.31, sig_limit=71.9, rho=1.0)
    assert b.rating_model is MODELS["glicko"] and b.params == GlickoParams(beta=200.0)
    assert c.rating_model is MODELS["trueskill"] and c.display.mode == "mu"  # LADDERS display wins
    assert c.newcomer.mu_noob == MODELS["trueskill"].params.mu_noob
    assert d.model == "codeforces" and d.display == DisplayConfig.from_dict(TIERS)
    assert ladders.of("e").model == "codeforces" and ladders.of("e").display.k == 4.0  # DISPLAY_CONFIG entry
    assert ladders.of("zzz").model == "codeforces"
    assert a.digest != parse_ladders("").of("a").digest
    with pytest.raises(TypeError):
        b.elo_mmr  # noqa: B018


@pytest.mark.parametrize(("raw", "names"), [
    ("[1]", "LADDERS: must be a JSON object"),
    ("{", "LADDERS: not JSON"),
    ('{"b": {"model": "glikco"}}', "LADDERS['b']: unknown model 'glikco'"),
    ('{"b": {"model": "glicko", "params": {"weight_limit": 1}}}', "LADDERS['b']: model 'glicko' has no parameter 'weight_limit'"),
    ('{"b": {"model": "glicko", "params": {"beta": -1}}}', "LADDERS['b']: beta must be positive"),
    ('{"b": {"model": "glicko", "params": {"beta": "x"}}}', "LADDERS['b']"),
    ('{"b": {"modle": "glicko"}}', "LADDERS['b']: unknown key 'modle'"),
    ('{"b": {"params": {"beta": 1}}}', "LADDERS['b'].params: give the model"),
    ('{"b": 3}', "LADDERS['b']: must be an object"),
    ('{"b/c": {}}', "LADDERS['b/c']: not a ladder name"),
    ('{"*": {"display": {"mode": "nope"}}}', "LADDERS['*'].display"),
    ('{"*": {"model": "mmr", "params": {"sig_limit": 0}}}', "LADDERS['*']"),
])
def test_invalid_configuration_names_the_key(raw: str, names: str) -> None:
    with pytest.raises(LaddersError) as info:
        parse_ladders(raw)
    assert names in str(info.value)


def test_invalid_shorthands_name_their_setting() -> None:
    with pytest.raises(LaddersError, match="ENGINE_PRESET: unknown preset 'nope'"):
        parse_ladders("", engine_preset="nope")
    with pytest.raises(LaddersError, match="DISPLAY_CONFIG"):
        parse_ladders("", display_config="[1]")


def test_worker_and_api_refuse_to_start_on_a_bad_ladders_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Checked before anything is connected: exit code 2 and the key at fault."""
    monkeypatch.setenv("LADDERS", '{"b": {"model": "glikco"}}')
    monkeypatch.setenv("KAFKA_BOOTSTRAP", "127.0.0.1:1")
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
    for command in (["worker", "--no-web"], ["api"]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2, command
        assert "LADDERS['b']: unknown model 'glikco'" in result.output


def test_worker_and_replay_refuse_to_start_on_a_bad_ladder_order(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    """LADDER_ORDER is checked with LADDERS: exit code 2 and the setting named, no traceback."""
    monkeypatch.setenv("LADDER_ORDER", '{"a": "bogus"}')
    monkeypatch.setenv("KAFKA_BOOTSTRAP", "127.0.0.1:1")
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
    empty = tmp_path / "rounds.jsonl"
    empty.write_text("")
    for command in (["worker", "--no-web"], ["replay", str(empty), "--output", str(tmp_path / "out.csv")]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2, (command, result.output)
        assert "LADDER_ORDER: unknown order(s) {'a': 'bogus'}" in result.output
        assert "Traceback" not in result.output


def test_the_entry_stream_tune_prints_is_accepted() -> None:
    """``stream tune`` prints ``{ladder: {"model", "params"}}``: the stream takes it as it is."""
    entry = {"default": {"model": "mmr", "params": {"weight_limit": 0.31, "sig_limit": 71.9, "rho": 1.0}},
             "*": {"model": "elo-multiplayer", "params": {"temperature": 300.0, "max_gain": 32.0}}}
    ladders = parse_ladders(json.dumps(entry))
    assert ladders.of("default").elo_mmr.weight_limit == 0.31
    assert ladders.of("other").model_params == MODELS["elo-multiplayer"].params.__class__(temperature=300.0, max_gain=32.0)


def test_draws_rate_is_a_ladders_parameter() -> None:
    """``draws_rate`` (true/false only) is each ladder's: the presets but mmr and every rating-only
    model rate draws by default; LADDERS may turn it either way."""
    ladders = parse_ladders(json.dumps({"a": {"model": "mmr"}, "b": {"model": "glicko", "params": {"draws_rate": False}},
                                        "c": {"model": "mmr", "params": {"draws_rate": True}}, "d": {"model": "trueskill"}}))
    assert [ladders.of(n).draws_rate for n in "abcde"] == [False, False, True, True, True]
    with pytest.raises(LaddersError, match="draws_rate.*true or false"):
        parse_ladders(json.dumps({"a": {"model": "mmx", "params": {"draws_rate": 1}}}))
