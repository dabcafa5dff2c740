"""Redis over TLS against a real TLS-only redis-server (throwaway CA): rediss:// with REDIS_TLS_CA
works; without the CA, with the wrong CA, with a certificate for another host name, or over
plaintext it fails; mutual TLS needs the client certificate (REDIS_TLS_CERT/KEY); TLS files with a
redis:// URL are a configuration error."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
import redis

from pki import Pki
from stream.connections import ConnectionConfigError, redis_client, redis_error_message, redis_options
from stream.settings import Settings
from stream.stack.redis_server import RedisServer

#: Seconds a refused connection may take to fail.
CONNECT_TIMEOUT_S = 5.0


def tls_settings(server: RedisServer, **changes: str) -> Settings:
    return Settings(redis_url=server.url, **changes)  # rediss://


def ping(settings: Settings) -> bool:
    client = redis_client(settings, asyncio=False, socket_connect_timeout=CONNECT_TIMEOUT_S,
                          socket_timeout=CONNECT_TIMEOUT_S)
    try:
        return bool(client.ping())
    finally:
        client.close()


def test_rediss_with_the_ca_reads_and_writes(tls_redis: Callable[..., RedisServer], pki: Pki) -> None:
    server = tls_redis()
    settings = tls_settings(server, redis_tls_ca=str(pki.ca))

    async def go() -> bytes | None:
        client = redis_client(settings)
        try:
            await client.set("ems:tls-check", b"ok")
            return await client.get("ems:tls-check")
        finally:
            await client.aclose()

    assert asyncio.run(go()) == b"ok"


def test_rediss_without_the_ca_fails_verification(tls_redis: Callable[..., RedisServer], pki: Pki) -> None:
    server = tls_redis()
    for settings in (tls_settings(server), tls_settings(server, redis_tls_ca=str(pki.other_ca))):
        with pytest.raises(redis.exceptions.ConnectionError) as caught:
            ping(settings)
        assert "certificate verify failed" in str(caught.value).lower()
        assert "TLS to Redis" in redis_error_message(settings, caught.value)


def test_plaintext_to_a_tls_port_fails(tls_redis: Callable[..., RedisServer]) -> None:
    server = tls_redis()
    with pytest.raises(redis.exceptions.ConnectionError):
        ping(Settings(redis_url=f"redis://127.0.0.1:{server.port}/0"))


def test_mutual_tls_needs_the_client_certificate(tls_redis: Callable[..., RedisServer], pki: Pki) -> None:
    server = tls_redis(clients_need_cert=True)
    with pytest.raises(redis.exceptions.ConnectionError):
        ping(tls_settings(server, redis_tls_ca=str(pki.ca)))
    assert ping(tls_settings(server, redis_tls_ca=str(pki.ca), redis_tls_cert=str(pki.client_cert),
                             redis_tls_key=str(pki.client_key)))


@pytest.mark.parametrize("changes", [{"redis_tls_ca": "/ca.pem"}, {"redis_tls_cert": "/c.pem", "redis_tls_key": "/k.pem"}])
def test_tls_files_with_a_plaintext_url_are_a_configuration_error(changes: dict[str, str]) -> None:
    with pytest.raises(ConnectionConfigError, match="rediss://"):
        redis_client(Settings(redis_url="redis://127.0.0.1:1/0", **changes))


def test_client_certificate_without_its_key_is_a_configuration_error() -> None:
    with pytest.raises(ConnectionConfigError, match="REDIS_TLS_KEY"):
        redis_client(Settings(redis_url="rediss://127.0.0.1:1/0", redis_tls_cert="/c.pem"))


def test_a_certificate_for_another_host_name_is_refused(tls_redis: Callable[..., RedisServer], pki: Pki) -> None:
    """The trusted CA issued the server's certificate for wrong-host.example: connecting to 127.0.0.1
    must fail on the host name (redis-py 5.x does not check it unless told to)."""
    server = tls_redis(wrong_host=True)
    settings = tls_settings(server, redis_tls_ca=str(pki.ca))
    with pytest.raises(redis.exceptions.ConnectionError) as caught:
        ping(settings)
    text = str(caught.value).lower()
    assert "hostname mismatch" in text or "doesn't match" in text or "ip address mismatch" in text, text
    assert "TLS to Redis" in redis_error_message(settings, caught.value)

    async def go() -> None:
        client = redis_client(settings, socket_connect_timeout=CONNECT_TIMEOUT_S)
        try:
            await client.ping()
        finally:
            await client.aclose()

    with pytest.raises(redis.exceptions.ConnectionError, match="(?i)mismatch|match"):
        asyncio.run(go())


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_the_right_host_name_is_accepted(tls_redis: Callable[..., RedisServer], pki: Pki, host: str) -> None:
    server = tls_redis()
    assert ping(Settings(redis_url=f"rediss://{host}:{server.port}/0", redis_tls_ca=str(pki.ca)))


def test_rediss_options_check_the_host_name_whatever_the_redis_py_default() -> None:
    options = redis_options(Settings(redis_url="rediss://127.0.0.1:1/0"))
    assert options["ssl_check_hostname"] is True and options["ssl_cert_reqs"] == "required"
    assert "ssl_check_hostname" not in redis_options(Settings(redis_url="redis://127.0.0.1:1/0"))
