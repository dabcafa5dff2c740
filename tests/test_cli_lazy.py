"""Issue 29 item 13: ``stream --help`` lists every command without importing any (the engine, numba,
Faust, numpy: seconds of imports; bench/cli_start.py measures the start), and the list says what
each command's own help says."""

from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from stream.cli.main import COMMANDS, app, load_command

HEAVY = ("numpy", "numba", "faust", "aiohttp", "kafka", "redis", "stream.engine", "stream.pipeline", "rich")


def test_help_imports_no_command_and_nothing_heavy() -> None:
    code = ("import sys; from stream.cli.main import main; sys.argv = ['stream', '--help']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r} or m in {HEAVY!r} "
            "or m.startswith('stream.cli.') and m != 'stream.cli.main'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"
    for name in COMMANDS:
        assert f"  {name} " in done.stdout, name


def test_the_listed_help_is_each_command_s_own() -> None:
    for name, (module, text) in COMMANDS.items():
        command = load_command(name)
        assert command.callback.__module__ == f"stream.cli.{module}", name
        assert " ".join((command.help or "").split("\n\n")[0].split()) == text, name


def test_every_command_runs_its_help_and_an_unknown_one_is_suggested() -> None:
    runner = CliRunner()
    for name in COMMANDS:
        result = runner.invoke(app, [name, "--help"])
        assert result.exit_code == 0 and "Usage:" in result.output, (name, result.output)
    result = runner.invoke(app, ["leaderbord"])
    assert result.exit_code == 2 and "No such command 'leaderbord'" in result.output
    assert "leaderboard" in result.output
