"""docker-compose.yml and Dockerfile: they cannot run here (no Docker engine), so check their wiring."""

from __future__ import annotations

from pathlib import Path

import yaml

from stream.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def _compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _env(service: dict) -> dict[str, str]:
    return {k: str(v) for k, v in service["environment"].items()}


def test_compose_has_the_services() -> None:
    services = _compose()["services"]
    assert set(services) == {"kafka", "kafka-setup", "redis", "worker", "api"}
    assert services["kafka"]["image"].startswith("apache/kafka")
    assert "broker,controller" in services["kafka"]["environment"]["KAFKA_PROCESS_ROLES"]  # KRaft, no ZooKeeper


def test_redis_persists_with_aof_on_a_volume() -> None:
    compose = _compose()
    redis = compose["services"]["redis"]
    command = redis["command"]
    assert command[command.index("--appendonly") + 1] == "yes"
    assert any(v.startswith("redis-data:/data") for v in redis["volumes"])
    assert "redis-data" in compose["volumes"]


def test_workers_are_scalable_and_wired_to_kafka_and_redis() -> None:
    services = _compose()["services"]
    worker, api, kafka = services["worker"], services["api"], services["kafka"]
    assert worker["deploy"]["replicas"] >= 2
    assert worker["command"][0] == "worker"
    assert api["command"] == ["api"]
    env = _env(worker)
    internal = next(l for l in kafka["environment"]["KAFKA_ADVERTISED_LISTENERS"].split(",") if l.startswith("INTERNAL://"))
    assert env["KAFKA_BOOTSTRAP"] == internal.removeprefix("INTERNAL://")
    assert env["REDIS_URL"].startswith("redis://redis:6379")
    assert worker["depends_on"]["kafka-setup"]["condition"] == "service_completed_successfully"
    assert services["kafka-setup"]["depends_on"]["kafka"]["condition"] == "service_healthy"
    assert worker["depends_on"]["redis"]["condition"] == "service_healthy"
    # The API listens on all interfaces inside its container, on the published port.
    api_env = _env(api)
    assert api_env["WEB_HOST"] == "0.0.0.0"
    assert f"127.0.0.1:{api_env['WEB_PORT']}:{api_env['WEB_PORT']}" in api["ports"]  # the host's loopback only


def test_every_service_variable_is_a_setting() -> None:
    """No typo'd environment variable: each one the app containers get is read by Settings."""
    known = {f.metadata["env"] for f in Settings.__dataclass_fields__.values()}
    services = _compose()["services"]
    for name in ("worker", "api"):
        assert set(_env(services[name])) <= known, name
    # And the settings parse (numbers are numbers).
    settings = Settings.from_env(environ=_env(services["worker"]))
    assert settings.partitions == int(_env(services["worker"])["PARTITIONS"])


def test_dockerfile_installs_the_package_and_runs_the_cli() -> None:
    lines = [l.strip() for l in (ROOT / "Dockerfile").read_text().splitlines() if l.strip() and not l.startswith("#")]
    assert lines[0] == "FROM python:3.11-slim"
    assert any(l.startswith("RUN pip install .") for l in lines)
    assert 'ENTRYPOINT ["stream"]' in lines
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'stream = "stream.cli.main:main"' in pyproject  # the entry point the image runs
