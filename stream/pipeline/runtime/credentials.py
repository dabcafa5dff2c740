"""Faust's broker URLs and ``broker_credentials`` from Settings: the same TLS and SASL options as
:func:`stream.connections.aiokafka_config`, in Faust's spelling (docs/security.md)."""

from __future__ import annotations

import faust
import faust.types.auth

from stream.connections import kafka_protocol, kafka_bootstrap, kafka_ssl_context
from stream.settings import Settings


def faust_broker(settings: Settings) -> list[str]:
    """Faust's ``broker`` argument: one ``kafka://host:port`` URL per bootstrap server."""
    return [f"kafka://{host}" for host in kafka_bootstrap(settings)]


def faust_credentials(settings: Settings) -> faust.types.auth.CredentialsT | None:
    """Faust's ``broker_credentials`` (handed to aiokafka): SASL (with TLS for SASL_SSL) or TLS alone; None for
    PLAINTEXT. ``faust.SASLCredentials`` reports SASL_PLAINTEXT when given no ``ssl_context``."""
    protocol = kafka_protocol(settings)
    if protocol == "PLAINTEXT":
        return None
    context = kafka_ssl_context(settings)
    if protocol.startswith("SASL"):
        return faust.SASLCredentials(username=settings.kafka_sasl_username, password=settings.kafka_sasl_password,
                                     mechanism=settings.kafka_sasl_mechanism.upper(), ssl_context=context)
    return faust.SSLCredentials(context)
