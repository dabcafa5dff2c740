"""Issue 29 item 12: docker-compose.yml runs the code's defaults and publishes nothing beyond the host's loopback."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import yaml

from stream.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def test_compose_rates_with_the_code_s_default_preset() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    default = next(f.default for f in fields(Settings) if f.name == "engine_preset")
    for name, service in compose["services"].items():
        env = service.get("environment") or {}
        if "ENGINE_PRESET" in env:
            assert env["ENGINE_PRESET"] == default, name


def test_every_published_port_is_bound_to_the_loopback() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    published = [(name, port) for name, service in compose["services"].items() for port in service.get("ports", [])]
    assert any(name == "api" for name, _ in published)
    for name, port in published:
        assert str(port).startswith("127.0.0.1:"), (name, port)
