"""Fixtures of the security tests: a throwaway PKI and private redis-servers with ACL users or TLS."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pki import Pki, make_pki
from servers import ACL_LINES, ConfiguredRedis, tls_capable_binary


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """CA, server certificate for 127.0.0.1 and a client certificate (made once per session)."""
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def acl_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConfiguredRedis]:
    """A redis-server whose default user is off, with the admin / worker / reader users of docs/security.md."""
    server = ConfiguredRedis(list(ACL_LINES), tmp_path_factory.mktemp("acl-redis")).start()
    yield server
    server.stop()


@pytest.fixture()
def tls_redis(tmp_path: Path, pki: Pki) -> Iterator[Callable[..., ConfiguredRedis]]:
    """Factory of TLS-only redis-servers (no plaintext port) with the test PKI; ``clients_need_cert``
    turns on mutual TLS."""
    started: list[ConfiguredRedis] = []

    def start(*, clients_need_cert: bool = False) -> ConfiguredRedis:
        config = [f"tls-cert-file {pki.server_cert}", f"tls-key-file {pki.server_key}",
                  f"tls-ca-cert-file {pki.ca}", f"tls-auth-clients {'yes' if clients_need_cert else 'no'}"]
        server = ConfiguredRedis(config, tmp_path / f"tls-{len(started)}", binary=tls_capable_binary())
        server.workdir.mkdir()
        started.append(server.start(tls=True))
        return server

    yield start
    for server in started:
        server.stop()
