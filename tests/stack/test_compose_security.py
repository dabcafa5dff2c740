"""The compose Kafka's security, checked on its files (no Docker here): every listener
authenticates (SASL, no PLAINTEXT anywhere, none published but the producers' SCRAM port on
127.0.0.1), an authorizer denies by default, and kafka-setup (run with stand-in Kafka tools that
record their arguments) gives the producer principal Write on `rounds` only and the workers their
own principal; deploy/make-secrets.sh writes the JAAS file and passwords the services read."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from stream.connections import kafka_python_security
from stream.pipeline.runtime.app import faust_credentials
from stream.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("kafka-configs.sh", "kafka-topics.sh", "kafka-acls.sh")


def kafka_env() -> dict[str, str]:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return {k: str(v) for k, v in compose["services"]["kafka"]["environment"].items()}


def listeners(value: str) -> dict[str, str]:
    """``NAME://host:port,...`` as name → host:port."""
    return dict(item.split("://", 1) for item in value.split(","))


def test_every_listener_authenticates_and_only_the_producer_port_is_published() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    env = kafka_env()
    protocols = dict(item.split(":") for item in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    bound = listeners(env["KAFKA_LISTENERS"])
    assert set(protocols) == set(bound)
    assert all(protocol.startswith("SASL_") for protocol in protocols.values()), protocols
    for name in bound:
        mechanisms = env[f"KAFKA_LISTENER_NAME_{name}_SASL_ENABLED_MECHANISMS"]
        assert mechanisms in ("PLAIN", "SCRAM-SHA-512"), (name, mechanisms)
        if mechanisms == "PLAIN":  # static passwords (the admin): only on the container's loopback
            assert bound[name].startswith("127.0.0.1:"), name
    assert env["KAFKA_LISTENER_NAME_EXTERNAL_SASL_ENABLED_MECHANISMS"] == "SCRAM-SHA-512"
    assert env["KAFKA_LISTENER_NAME_INTERNAL_SASL_ENABLED_MECHANISMS"] == "SCRAM-SHA-512"
    # one published port: the EXTERNAL listener's, on the host's loopback
    assert compose["services"]["kafka"]["ports"] == [f"127.0.0.1:{bound['EXTERNAL'].split(':')[1]}:9094"]
    for name, service in compose["services"].items():
        if name not in ("kafka", "api"):
            assert "ports" not in service, name
    assert env["KAFKA_AUTHORIZER_CLASS_NAME"].endswith("StandardAuthorizer")
    assert env["KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND"] == "false"
    assert env["KAFKA_SUPER_USERS"] == "User:admin"
    assert "java.security.auth.login.config=/secrets/kafka_server_jaas.conf" in env["KAFKA_OPTS"]
    for name, service in compose["services"].items():  # passwords come from secrets/, never the compose file
        assert not any("PASSWORD" in key for key in service.get("environment", {})), name


def test_workers_use_their_own_scram_principal_with_the_password_from_a_file() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    worker = compose["services"]["worker"]
    env = {k: str(v) for k, v in worker["environment"].items()}
    assert env["KAFKA_BOOTSTRAP"] == "kafka:9092" and listeners(kafka_env()["KAFKA_ADVERTISED_LISTENERS"])[
        "INTERNAL"] == "kafka:9092"
    assert (env["KAFKA_SECURITY_PROTOCOL"], env["KAFKA_SASL_MECHANISM"], env["KAFKA_SASL_USERNAME"]) == (
        "SASL_PLAINTEXT", "SCRAM-SHA-512", "ems-worker")
    assert "KAFKA_SASL_PASSWORD" not in env and worker["env_file"] == "secrets/worker.env"
    settings = Settings.from_env(environ={**env, "KAFKA_SASL_PASSWORD": "x"})
    assert kafka_python_security(settings)["sasl_mechanism"] == "SCRAM-SHA-512"
    assert faust_credentials(settings) is not None
    api = {k: str(v) for k, v in compose["services"]["api"]["environment"].items()}
    assert not any(k.startswith("KAFKA_") for k in api)  # the read API never talks to Kafka


@pytest.fixture(scope="module")
def secrets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("compose") / "secrets"
    subprocess.run(["bash", str(ROOT / "deploy/make-secrets.sh"), str(directory)], check=True, capture_output=True)
    return directory


def test_make_secrets_writes_private_files_the_services_agree_on(secrets: Path) -> None:
    for path in secrets.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    jaas = (secrets / "kafka_server_jaas.conf").read_text()
    for name in listeners(kafka_env()["KAFKA_LISTENERS"]):
        assert f"{name.lower()}.KafkaServer {{" in jaas, name
    admin = (secrets / "admin.password").read_text().strip()
    assert len(admin) >= 32 and f'user_admin="{admin}"' in jaas
    assert f'username="admin" password="{admin}"' in (secrets / "admin.properties").read_text()
    worker = (secrets / "worker.password").read_text().strip()
    assert (secrets / "worker.env").read_text() == f"KAFKA_SASL_PASSWORD={worker}\n"
    producer = (secrets / "producer.env").read_text()
    assert "KAFKA_SASL_USERNAME=ems-producer" in producer and "SASL_PLAINTEXT" in producer
    assert (secrets / "producer.password").read_text().strip() in producer
    before = {p.name: p.read_text() for p in secrets.iterdir()}
    subprocess.run(["bash", str(ROOT / "deploy/make-secrets.sh"), str(secrets)], check=True, capture_output=True)
    assert {p.name: p.read_text() for p in secrets.iterdir()} == before  # re-running keeps the passwords


def run_setup(tmp_path: Path, secrets: Path) -> list[list[str]]:
    """deploy/kafka-setup.sh with stand-ins for the Kafka tools; the argument lists they got."""
    bin_dir, log = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    for tool in TOOLS:
        script = bin_dir / tool
        script.write_text(f'#!/usr/bin/env bash\nprintf "%s\\x1f" "{tool}" "$@" >> "{log}"\nprintf "\\n" >> "{log}"\n')
        script.chmod(0o755)
    subprocess.run(["bash", str(ROOT / "deploy/kafka-setup.sh")], check=True, capture_output=True,
                   env={**os.environ, "KAFKA_BIN": str(bin_dir), "SECRETS_DIR": str(secrets), "PARTITIONS": "8"})
    return [line.rstrip("\x1f").split("\x1f") for line in log.read_text().splitlines()]


def option(args: list[str], name: str) -> list[str]:
    return [args[i + 1] for i, arg in enumerate(args) if arg == name]


def test_kafka_setup_acls_give_producers_write_on_rounds_only(tmp_path: Path, secrets: Path) -> None:
    calls = run_setup(tmp_path, secrets)
    for call in calls:  # every call as the admin, over the loopback admin listener
        assert option(call, "--bootstrap-server") == ["127.0.0.1:9091"]
        assert option(call, "--command-config") == [str(secrets / "admin.properties")]
    users = {option(c, "--entity-name")[0]: option(c, "--add-config")[0] for c in calls if c[0] == "kafka-configs.sh"}
    assert set(users) == {"ems-worker", "ems-producer"}
    assert users["ems-worker"].startswith("SCRAM-SHA-512=") and (secrets / "worker.password").read_text().strip() in \
        users["ems-worker"]
    topics = {option(c, "--topic")[0] for c in calls if c[0] == "kafka-topics.sh"}
    assert topics == {"rounds", "player-updates", "rating-changes", "rounds-dlq"}

    grants: dict[str, set[tuple[str, str, str, str]]] = {}
    for call in (c for c in calls if c[0] == "kafka-acls.sh"):
        assert "--add" in call and "--deny-principal" not in call
        (principal,) = option(call, "--allow-principal")
        pattern = (option(call, "--resource-pattern-type") or ["literal"])[0]
        resources = [("topic", t) for t in option(call, "--topic")] + [("group", g) for g in option(call, "--group")]
        assert len(resources) == 1 and "--cluster" not in call
        kind, name = resources[0]
        grants.setdefault(principal, set()).update((op, kind, name, pattern) for op in option(call, "--operation"))
    assert set(grants) == {"User:ems-producer", "User:ems-worker"}
    assert grants["User:ems-producer"] == {("Write", "topic", "rounds", "literal"),
                                           ("Describe", "topic", "rounds", "literal")}
    worker = grants["User:ems-worker"]
    assert ("Read", "topic", "rounds", "literal") in worker and ("Write", "topic", "rounds", "literal") not in worker
    for topic in ("player-updates", "rating-changes", "rounds-dlq"):
        assert ("Write", "topic", topic, "literal") in worker
    assert ("Read", "group", "elo-mmr-stream", "prefixed") in worker
