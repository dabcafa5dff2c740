"""The dependencies whose internals the service patches are pinned exactly, in pyproject.toml and
at start-up, where another version ends in one clear line."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from stream import dependencies

ROOT = Path(__file__).resolve().parent.parent


def test_pyproject_pins_exactly_what_the_code_checks() -> None:
    requirements = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = dict(r.split("==") for r in requirements if "==" in r)
    for name, version in dependencies.PINNED.items():
        assert pins.get(name) == version, name
    assert set(dependencies.RUNTIME) | set(dependencies.STORE) == set(dependencies.PINNED)


def test_the_installed_versions_pass() -> None:
    assert dependencies.mismatches(tuple(dependencies.PINNED)) == []
    dependencies.check(tuple(dependencies.PINNED))


def test_another_version_is_named_with_the_one_required() -> None:
    def installed(name: str) -> str:
        if name == "mode-streaming":
            raise metadata.PackageNotFoundError(name)
        return "9.9.9" if name == "aiokafka" else dependencies.PINNED[name]

    found = dependencies.mismatches(dependencies.RUNTIME, installed)
    assert len(found) == 2
    assert found[0].startswith("mode-streaming none is installed, the service needs mode-streaming==0.7.1")
    assert found[1].startswith("aiokafka 9.9.9 is installed, the service needs aiokafka==0.14.0")


def test_a_mismatch_ends_the_process_with_one_line(tmp_path: Path) -> None:
    script = ("import stream.dependencies as d; d.PINNED['redis'] = '0.0.1'; "
              "from stream.store.store import Store; Store(None, history_length=1)")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == [
        f"error: redis {metadata.version('redis')} is installed, the service needs redis==0.0.1 "
        "(it patches that release's internals; reinstall with: pip install -e .)"]

