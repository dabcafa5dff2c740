"""A throwaway PKI for TLS tests: a CA, a server certificate for 127.0.0.1/localhost, one signed by
the same CA for another host name, and a client certificate, all made with the ``openssl`` command
line in a temporary directory."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: Validity of the throwaway certificates (days).
DAYS = "2"
#: RSA key size: small keeps generation fast; the certificates live for one test session.
KEY_BITS = "2048"
#: Subject alternative names of the server certificate (what clients verify the host name against).
SERVER_SAN = "subjectAltName=IP:127.0.0.1,DNS:localhost"
#: Subject alternative names of a certificate the test CA issued for some other host.
WRONG_HOST_SAN = "subjectAltName=DNS:wrong-host.example"


@dataclass(frozen=True)
class Pki:
    """Paths of the PEM files."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path
    """A second CA that signed nothing here: trusting it alone must fail verification."""
    wrong_host_cert: Path
    """Signed by ``ca`` for ``wrong-host.example`` only: a client reaching 127.0.0.1 must refuse it."""
    wrong_host_key: Path


def _openssl(*args: str) -> None:
    binary = shutil.which("openssl")
    assert binary, "the openssl command is needed to make test certificates (apt-get install openssl)"
    subprocess.run([binary, *args], check=True, capture_output=True, timeout=60)


def _ca(directory: Path, name: str) -> tuple[Path, Path]:
    key, cert = directory / f"{name}.key", directory / f"{name}.crt"
    _openssl("req", "-x509", "-newkey", f"rsa:{KEY_BITS}", "-nodes", "-keyout", str(key), "-out", str(cert),
             "-days", DAYS, "-subj", f"/CN={name}")
    return key, cert


def _signed(directory: Path, name: str, ca_key: Path, ca_cert: Path, extension: str | None) -> tuple[Path, Path]:
    key, csr, cert = directory / f"{name}.key", directory / f"{name}.csr", directory / f"{name}.crt"
    _openssl("req", "-newkey", f"rsa:{KEY_BITS}", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={name}")
    args = ["x509", "-req", "-in", str(csr), "-CA", str(ca_cert), "-CAkey", str(ca_key), "-CAcreateserial",
            "-out", str(cert), "-days", DAYS]
    if extension:
        ext = directory / f"{name}.ext"
        ext.write_text(extension + "\n")
        args += ["-extfile", str(ext)]
    _openssl(*args)
    return cert, key


def make_pki(directory: Path) -> Pki:
    """CA, server (SAN 127.0.0.1 and localhost), wrong-host and client certificates in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = _ca(directory, "test-ca")
    _, other_ca = _ca(directory, "other-ca")
    server_cert, server_key = _signed(directory, "server", ca_key, ca_cert, SERVER_SAN)
    wrong_cert, wrong_key = _signed(directory, "wrong-host", ca_key, ca_cert, WRONG_HOST_SAN)
    client_cert, client_key = _signed(directory, "client", ca_key, ca_cert, None)
    return Pki(ca_cert, server_cert, server_key, client_cert, client_key, other_ca, wrong_cert, wrong_key)
