"""The README stays true: its configuration table is the settings' table, its commands exist."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from typer.testing import CliRunner

from stream.cli.main import app

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _update_readme_module():
    spec = importlib.util.spec_from_file_location("update_readme", ROOT / "scripts" / "update_readme.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_configuration_table_matches_settings() -> None:
    assert _update_readme_module().render(README) == README, "run: python scripts/update_readme.py"


def test_every_command_in_the_readme_exists() -> None:
    commands = set(re.findall(r"`stream ([a-z-]+)", README))
    assert {"publish", "tail", "replay", "stack", "worker"} <= commands
    runner = CliRunner()
    for command in sorted(commands):
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0, (command, result.output)
        assert "<bool>" not in result.output, (command, "a flag takes no value: no type after it")


def test_quick_start_scripts_exist() -> None:
    for script in ("scripts/run.sh", "scripts/test.sh", ".ci/run"):
        assert (ROOT / script).is_file(), script
    assert "scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
