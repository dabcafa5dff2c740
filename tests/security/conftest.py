"""Fixtures of the security tests: a throwaway PKI and private redis-servers with ACL users or TLS."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pki import Pki, make_pki
from servers import ACL_LINES, tls_capable_binary
from stream.stack.redis_server import RedisServer


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """CA, server certificate for 127.0.0.1 and a client certificate (made once per session)."""
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def acl_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A redis-server whose default user is off, with the admin / worker / reader users of docs/security.md."""
    server = RedisServer(workdir=tmp_path_factory.mktemp("acl-redis"), config=ACL_LINES).start()
    yield server
    server.stop()


@pytest.fixture()
def tls_redis(tmp_path: Path, pki: Pki) -> Iterator[Callable[..., RedisServer]]:
    """Factory of TLS-only redis-servers (no plaintext port) with the test PKI; ``clients_need_cert``
    turns on mutual TLS, ``wrong_host`` serves a certificate (from the trusted CA) for another host name."""
    started: list[RedisServer] = []

    def start(*, clients_need_cert: bool = False, wrong_host: bool = False) -> RedisServer:
        cert, key = (pki.wrong_host_cert, pki.wrong_host_key) if wrong_host else (pki.server_cert, pki.server_key)
        config = [f"tls-cert-file {cert}", f"tls-key-file {key}",
                  f"tls-ca-cert-file {pki.ca}", f"tls-auth-clients {'yes' if clients_need_cert else 'no'}"]
        server = RedisServer(workdir=tmp_path / f"tls-{len(started)}", config=config, tls=True,
                             binary=tls_capable_binary())
        started.append(server.start())
        return server

    yield start
    for server in started:
        server.stop()
