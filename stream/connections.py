"""Every Kafka and Redis client's connection options (TLS, authentication), from the one set of settings, in one
place (docs/security.md): misconfiguration fails early with :class:`ConnectionConfigError` naming the variable,
and no message built here contains a password.
"""

from __future__ import annotations

import socket
import ssl
from typing import TYPE_CHECKING, Any, Literal, cast, overload
from urllib.parse import urlsplit

from stream.store.cancel import make_cancel_safe
from stream.settings import KAFKA_PROTOCOLS, KAFKA_SASL_MECHANISMS, Settings, _redact

if TYPE_CHECKING:
    import redis
    import redis.cluster

    from stream.store.client import AsyncRedis

    SyncRedis = redis.Redis | redis.cluster.RedisCluster

#: URL scheme of a Redis server over TCP with TLS.
REDIS_TLS_SCHEME = "rediss"
#: Kafka security protocols that encrypt the connection.
KAFKA_TLS_PROTOCOLS = ("SSL", "SASL_SSL")


class ConnectionConfigError(ValueError):
    """The connection settings are inconsistent (the message names the environment variable)."""


# ---------------------------------------------------------------- Kafka


def kafka_protocol(settings: Settings) -> str:
    """``KAFKA_SECURITY_PROTOCOL`` checked against the SASL and TLS settings it needs (ConnectionConfigError if not)."""
    protocol = settings.kafka_security_protocol.strip().upper()
    if protocol not in KAFKA_PROTOCOLS:
        raise ConnectionConfigError(f"KAFKA_SECURITY_PROTOCOL must be one of {', '.join(KAFKA_PROTOCOLS)}, got {protocol!r}")
    if protocol.startswith("SASL"):
        if settings.kafka_sasl_mechanism.upper() not in KAFKA_SASL_MECHANISMS:
            raise ConnectionConfigError(f"KAFKA_SASL_MECHANISM must be one of {', '.join(KAFKA_SASL_MECHANISMS)}, "
                                        f"got {settings.kafka_sasl_mechanism!r}")
        if not settings.kafka_sasl_username:
            raise ConnectionConfigError(f"KAFKA_SECURITY_PROTOCOL={protocol} needs KAFKA_SASL_USERNAME (and KAFKA_SASL_PASSWORD)")
    if bool(settings.kafka_ssl_certfile) != bool(settings.kafka_ssl_keyfile):
        raise ConnectionConfigError("KAFKA_SSL_CERTFILE and KAFKA_SSL_KEYFILE go together (client certificate and its key)")
    if protocol not in KAFKA_TLS_PROTOCOLS and (settings.kafka_ssl_cafile or settings.kafka_ssl_certfile):
        raise ConnectionConfigError(f"KAFKA_SSL_* is set but KAFKA_SECURITY_PROTOCOL={protocol} does not use TLS "
                                    "(use SSL or SASL_SSL)")
    return protocol


def kafka_bootstrap(settings: Settings) -> list[str]:
    """``KAFKA_BOOTSTRAP`` as a list of host:port."""
    return [host.strip() for host in settings.kafka_bootstrap.split(",") if host.strip()]


def kafka_ssl_context(settings: Settings) -> ssl.SSLContext | None:
    """The TLS context of aiokafka / Faust (None without TLS): verifies the broker's certificate and host
    name against ``KAFKA_SSL_CAFILE`` (or the system CAs), and presents the client certificate if set."""
    if kafka_protocol(settings) not in KAFKA_TLS_PROTOCOLS:
        return None
    context = ssl.create_default_context(cafile=settings.kafka_ssl_cafile or None)
    if settings.kafka_ssl_certfile:
        context.load_cert_chain(settings.kafka_ssl_certfile, settings.kafka_ssl_keyfile)
    return context


def _kafka_auth(settings: Settings) -> tuple[str, dict[str, Any]]:
    """The checked protocol, and the protocol and SASL options kafka-python and aiokafka both take."""
    protocol = kafka_protocol(settings)
    config: dict[str, Any] = {"security_protocol": protocol}
    if protocol.startswith("SASL"):
        config |= {"sasl_mechanism": settings.kafka_sasl_mechanism.upper(),
                   "sasl_plain_username": settings.kafka_sasl_username,
                   "sasl_plain_password": settings.kafka_sasl_password}
    return protocol, config


def kafka_python_security(settings: Settings) -> dict[str, Any]:
    """kafka-python's security options (``KafkaProducer``/``KafkaConsumer``/``KafkaAdminClient`` kwargs)."""
    protocol, config = _kafka_auth(settings)
    if protocol in KAFKA_TLS_PROTOCOLS:
        config |= {"ssl_check_hostname": True}
        if settings.kafka_ssl_cafile:
            config["ssl_cafile"] = settings.kafka_ssl_cafile
        if settings.kafka_ssl_certfile:
            config |= {"ssl_certfile": settings.kafka_ssl_certfile, "ssl_keyfile": settings.kafka_ssl_keyfile}
    return config


def kafka_python_config(settings: Settings) -> dict[str, Any]:
    """kafka-python client kwargs: ``bootstrap_servers`` plus :func:`kafka_python_security`."""
    return {"bootstrap_servers": kafka_bootstrap(settings), **kafka_python_security(settings)}


def aiokafka_config(settings: Settings) -> dict[str, Any]:
    """``AIOKafkaProducer``/``AIOKafkaConsumer`` kwargs: bootstrap, protocol, SASL user and an ``ssl_context``."""
    config = {"bootstrap_servers": kafka_bootstrap(settings), **_kafka_auth(settings)[1]}
    context = kafka_ssl_context(settings)
    if context is not None:
        config["ssl_context"] = context
    return config


# ---------------------------------------------------------------- Redis


def redis_options(settings: Settings) -> dict[str, Any]:
    """redis-py ``from_url`` options beyond the URL: reply and connect timeouts (None for 0: no limit) and TCP
    keepalive (first probe after REDIS_KEEPALIVE_S idle seconds, then every third of it, 3 probes), so a hung or
    silently dead Redis makes a call fail and be retried; ACL user/password overrides and TLS files;
    ``rediss://`` verifies the certificate and host name (redis-py leaves the latter off by default), and
    ``REDIS_TLS_*`` with ``redis://`` is an error rather than a silent plaintext connection."""
    scheme = urlsplit(settings.redis_url).scheme.lower()
    idle = settings.redis_keepalive_s
    options: dict[str, Any] = {"socket_timeout": settings.redis_socket_timeout_s or None,
                               "socket_connect_timeout": settings.redis_connect_timeout_s or None}
    if idle > 0 and scheme in ("redis", REDIS_TLS_SCHEME):  # unix:// has no keepalive
        keepalive = {"TCP_KEEPIDLE": idle, "TCP_KEEPINTVL": max(1, idle // 3), "TCP_KEEPCNT": 3}  # lacking: default
        options |= {"socket_keepalive": True, "socket_keepalive_options": {
            getattr(socket, name): value for name, value in keepalive.items() if hasattr(socket, name)}}
    if settings.redis_username:
        options["username"] = settings.redis_username
    if settings.redis_password:
        options["password"] = settings.redis_password
    tls_files = {"ssl_ca_certs": settings.redis_tls_ca, "ssl_certfile": settings.redis_tls_cert,
                 "ssl_keyfile": settings.redis_tls_key}
    if scheme == REDIS_TLS_SCHEME:
        options |= {"ssl_cert_reqs": "required", "ssl_check_hostname": True}
    if bool(settings.redis_tls_cert) != bool(settings.redis_tls_key):
        raise ConnectionConfigError("REDIS_TLS_CERT and REDIS_TLS_KEY go together (client certificate and its key)")
    if any(tls_files.values()):
        if scheme != REDIS_TLS_SCHEME:
            raise ConnectionConfigError(f"REDIS_TLS_* is set but REDIS_URL is {scheme}:// (use rediss:// for TLS)")
        options |= {name: path for name, path in tls_files.items() if path}
    return options


@overload
def redis_client(settings: Settings, *, asyncio: Literal[True] = True, decode_responses: bool = False,
                 **extra: Any) -> "AsyncRedis": ...


@overload
def redis_client(settings: Settings, *, asyncio: Literal[False], decode_responses: bool = False,
                 **extra: Any) -> "SyncRedis": ...


def redis_client(settings: Settings, *, asyncio: bool = True, decode_responses: bool = False,
                 **extra: Any) -> "AsyncRedis | SyncRedis":
    """A redis-py client for ``REDIS_URL`` with :func:`redis_options` and ``extra``: ``redis.asyncio`` (its
    connections :mod:`cancel-safe <stream.store.cancel>`) unless ``asyncio=False``; with ``REDIS_CLUSTER`` a
    cluster client (``REDIS_URL`` names any node; database 0 only, another is a :class:`ConnectionConfigError`)."""
    options = {**redis_options(settings), **extra}
    kind: Any
    if settings.redis_cluster:
        database = urlsplit(settings.redis_url).path.strip("/")
        if database not in ("", "0"):
            raise ConnectionConfigError(f"REDIS_URL selects database {database}, but REDIS_CLUSTER=true: "
                                        "a Redis Cluster has database 0 only")
        from redis.asyncio.cluster import RedisCluster as AsyncCluster
        from redis.cluster import RedisCluster
        kind = AsyncCluster if asyncio else RedisCluster
    else:
        import redis.asyncio  # binds redis too
        kind = redis.asyncio.Redis if asyncio else redis.Redis
    client = kind.from_url(settings.redis_url, decode_responses=decode_responses, **options)
    if asyncio:
        make_cancel_safe(client)
    return cast("AsyncRedis | SyncRedis", client)


def describe_redis(settings: Settings) -> str:
    """REDIS_URL safe to log or print: credentials and password parameters masked."""
    return str(_redact(settings.redis_url))


def redis_error_message(settings: Settings, exc: BaseException) -> str:
    """A one-line, secret-free explanation of a Redis connection failure for logs and CLI errors."""
    from redis.exceptions import AuthenticationError, NoPermissionError

    where = describe_redis(settings)
    text = str(exc)
    for secret in (settings.redis_password, urlsplit(settings.redis_url).password):
        if secret:
            text = text.replace(secret, "***")
    if isinstance(exc, AuthenticationError):
        return f"Redis at {where} refused the credentials ({text}); check REDIS_URL / REDIS_USERNAME / REDIS_PASSWORD"
    if isinstance(exc, NoPermissionError):
        return f"the Redis user of {where} lacks a permission ({text}); see docs/security.md for the ACL rules"
    if isinstance(exc, ssl.SSLError) or "SSL" in text.upper() or "CERTIFICATE" in text.upper():
        return f"TLS to Redis at {where} failed ({text}); check rediss:// and REDIS_TLS_CA"
    return f"cannot use Redis at {where}: {text}"


def redis_connection_errors() -> tuple[type[BaseException], ...]:
    """Exception classes of a failed Redis connection, authentication, permission or TLS handshake
    (what CLI commands turn into :func:`redis_error_message` instead of a traceback)."""
    from redis.exceptions import AuthenticationError, ConnectionError as RedisConnectionError, NoPermissionError

    return (RedisConnectionError, AuthenticationError, NoPermissionError, ssl.SSLError, ConnectionConfigError)
