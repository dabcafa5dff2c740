"""Kafka SASL/TLS options as each client receives them (kafka-python, aiokafka, Faust).

The embedded broker (Tansu 0.6.0) cannot serve TLS (its ``--cert``/``--key`` options are
mutually exclusive and neither makes it speak TLS) and keeps SASL users only in a storage engine
another process cannot reach, so these are tests of our configuration mapping, not of a broker;
docs/security.md says Kafka SASL/TLS is verified against deployment brokers only. Faust's own
``credentials_to_aiokafka_auth`` is used to check what Faust finally hands aiokafka.
"""

from __future__ import annotations

import ssl

import pytest
from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth

from pki import Pki
from stream.connections import ConnectionConfigError, aiokafka_config, kafka_python_config, kafka_python_security
from stream.pipeline.runtime.app import create_app
from stream.pipeline.runtime.app import faust_broker, faust_credentials
from stream.settings import Settings

SASL = {"kafka_sasl_mechanism": "SCRAM-SHA-512", "kafka_sasl_username": "ems", "kafka_sasl_password": "k-Secret-1"}


def test_plaintext_is_the_default_everywhere() -> None:
    settings = Settings(kafka_bootstrap="a:9092, b:9093")
    assert kafka_python_config(settings) == {"bootstrap_servers": ["a:9092", "b:9093"], "security_protocol": "PLAINTEXT"}
    assert aiokafka_config(settings) == {"bootstrap_servers": ["a:9092", "b:9093"], "security_protocol": "PLAINTEXT"}
    assert faust_credentials(settings) is None
    assert faust_broker(settings) == ["kafka://a:9092", "kafka://b:9093"]


def test_sasl_ssl_carries_user_mechanism_and_verified_tls(pki: Pki) -> None:
    settings = Settings(kafka_security_protocol="SASL_SSL", kafka_ssl_cafile=str(pki.ca), **SASL)
    assert kafka_python_security(settings) == {
        "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "ems",
        "sasl_plain_password": "k-Secret-1", "ssl_check_hostname": True, "ssl_cafile": str(pki.ca)}
    aio = aiokafka_config(settings)
    assert {k: aio[k] for k in ("security_protocol", "sasl_mechanism", "sasl_plain_username", "sasl_plain_password")} == {
        "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "ems",
        "sasl_plain_password": "k-Secret-1"}
    context = aio["ssl_context"]
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert any(cert["subject"] == ((("commonName", "test-ca"),),) for cert in context.get_ca_certs())
    faust_auth = credentials_to_aiokafka_auth(faust_credentials(settings))
    assert {k: faust_auth[k] for k in ("security_protocol", "sasl_mechanism", "sasl_plain_username", "sasl_plain_password")} \
        == {k: aio[k] for k in ("security_protocol", "sasl_mechanism", "sasl_plain_username", "sasl_plain_password")}
    assert faust_auth["ssl_context"].verify_mode == ssl.CERT_REQUIRED


def test_sasl_plaintext_has_no_tls() -> None:
    settings = Settings(kafka_security_protocol="SASL_PLAINTEXT", **SASL)
    assert "ssl_context" not in aiokafka_config(settings)
    assert not any(k.startswith("ssl_") for k in kafka_python_security(settings))
    faust_auth = credentials_to_aiokafka_auth(faust_credentials(settings))
    assert faust_auth["security_protocol"] == "SASL_PLAINTEXT" and faust_auth["ssl_context"] is None


def test_ssl_with_a_client_certificate(pki: Pki) -> None:
    settings = Settings(kafka_security_protocol="SSL", kafka_ssl_cafile=str(pki.ca),
                        kafka_ssl_certfile=str(pki.client_cert), kafka_ssl_keyfile=str(pki.client_key))
    config = kafka_python_config(settings)
    assert (config["security_protocol"], config["ssl_certfile"], config["ssl_keyfile"]) == (
        "SSL", str(pki.client_cert), str(pki.client_key))
    assert "sasl_plain_password" not in config
    faust_auth = credentials_to_aiokafka_auth(faust_credentials(settings))
    assert faust_auth["security_protocol"] == "SSL" and isinstance(faust_auth["ssl_context"], ssl.SSLContext)


def test_the_worker_app_gets_the_credentials(pki: Pki, tmp_path) -> None:
    settings = Settings(kafka_security_protocol="SASL_SSL", kafka_ssl_cafile=str(pki.ca), **SASL)
    app = create_app(settings, datadir=str(tmp_path)).app
    auth = credentials_to_aiokafka_auth(app.conf.broker_credentials)
    assert (auth["security_protocol"], auth["sasl_mechanism"], auth["sasl_plain_username"]) == (
        "SASL_SSL", "SCRAM-SHA-512", "ems")
    assert "k-Secret-1" not in repr(app.conf.broker_credentials)


@pytest.mark.parametrize("changes, variable", [
    ({"kafka_security_protocol": "TLS"}, "KAFKA_SECURITY_PROTOCOL"),
    ({"kafka_security_protocol": "SASL_SSL", "kafka_sasl_mechanism": "GSSAPI", "kafka_sasl_username": "u"}, "KAFKA_SASL_MECHANISM"),
    ({"kafka_security_protocol": "SASL_SSL"}, "KAFKA_SASL_USERNAME"),
    ({"kafka_ssl_cafile": "/ca.pem"}, "KAFKA_SSL_"),
    ({"kafka_security_protocol": "SSL", "kafka_ssl_certfile": "/c.pem"}, "KAFKA_SSL_KEYFILE"),
])
def test_inconsistent_settings_name_the_variable(changes: dict[str, str], variable: str) -> None:
    with pytest.raises(ConnectionConfigError, match=variable):
        kafka_python_config(Settings(**changes))
