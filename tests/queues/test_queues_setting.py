"""QUEUES is checked at start-up like LADDERS: a bad entry names its key and the worker exits 2
before connecting anything; a queue of teams needs a ladder whose model rates teams."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from stream.cli.main import app
from stream.pipeline.context import load_ladders, load_queues
from stream.settings import Settings, SettingsError


@pytest.mark.parametrize("queues, expected", [
    ('{"duel": {"ladder": "d", "teamz": 2}}', "QUEUES[\"duel\"]: unknown key 'teamz'"),
    ('{"duel": {"ladder": "d", "max_wait_s": -1}}', 'QUEUES["duel"].max_wait_s'),
    ('[1]', "QUEUES: must be a JSON object"),
    ('{"v5": {"ladder": "g", "teams": 2, "team_size": 5}}', "QUEUES['v5'].team_size: teams of 5 need a ladder"),
])
def test_the_worker_refuses_to_start_on_a_bad_queues_setting(monkeypatch: pytest.MonkeyPatch, queues: str,
                                                              expected: str) -> None:
    monkeypatch.setenv("QUEUES", queues)
    monkeypatch.setenv("LADDERS", '{"g": {"model": "glicko"}}')
    monkeypatch.setenv("KAFKA_BOOTSTRAP", "127.0.0.1:1")
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
    result = CliRunner().invoke(app, ["worker", "--no-web"])
    assert result.exit_code == 2
    assert expected in result.output


def test_team_queues_on_team_ladders_and_duels_on_any() -> None:
    settings = Settings.from_env({"LADDERS": '{"g": {"model": "glicko"}}', "QUEUES": (
        '{"v5": {"ladder": "mmr", "teams": 2, "team_size": 5}, "duel": {"ladder": "g"},'
        ' "lobby": {"ladder": "g", "teams": 1, "team_size": 64}}')})
    queues = load_queues(settings, load_ladders(settings))
    assert sorted(queues) == ["duel", "lobby", "v5"] and queues["v5"].team_size == 5
    with pytest.raises(SettingsError):
        bad = Settings.from_env({"LADDERS": '{"g": {"model": "glicko"}}',
                                 "QUEUES": '{"v2": {"ladder": "g", "teams": 2, "team_size": 2}}'})
        load_queues(bad, load_ladders(bad))
