"""The server's TLS files, read and checked with ``cryptography`` before gRPC sees them.

gRPC core reports a bad certificate or key only as "Failed to bind to address" (its own reason
goes to its log), which blames the port. So the composition root loads the three ``[tls]`` files
here first: each must be readable, the certificate file must hold at least one PEM certificate
(RFC 7468; the first is the server's, any others its chain), the key file an unencrypted PEM
private key (gRPC takes it in memory, docs/security.md) whose public key is the first
certificate's (compared as SubjectPublicKeyInfo, RFC 5280 section 4.1.2.7), and the client CA
file at least one PEM certificate. Any problem is a :class:`TlsFileError` naming the setting,
the file and what is wrong. Pure: no gRPC, no logging; file contents never appear in messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

__all__ = ["ServerTls", "TlsFileError", "load_server_tls"]


class TlsFileError(ValueError):
    """A ``[tls]`` file is unreadable, malformed, or does not fit the others."""

    def __init__(self, setting: str, path: str, problem: str) -> None:
        self.setting = setting
        self.path = path
        self.problem = problem  # names the file
        super().__init__(f"{setting}: {problem}")


@dataclass(frozen=True, slots=True)
class ServerTls:
    """The PEM bytes gRPC gets, after the checks."""

    cert_chain: bytes
    private_key: bytes
    client_ca: bytes

    def __repr__(self) -> str:
        return "ServerTls(cert_chain=..., private_key=<hidden>, client_ca=...)"


def _read(setting: str, path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise TlsFileError(setting, path, f"cannot read {path}: {e.strerror or e}") from None


def _certificates(setting: str, path: str, data: bytes) -> list[x509.Certificate]:
    try:
        certs = x509.load_pem_x509_certificates(data)
    except ValueError:
        certs = []
    if not certs:
        raise TlsFileError(setting, path, f"{path} holds no readable PEM certificate")
    return certs


def _private_key(setting: str, path: str, data: bytes) -> PrivateKeyTypes:
    try:
        return serialization.load_pem_private_key(data, password=None)
    except TypeError:
        raise TlsFileError(
            setting, path, f"{path} is an encrypted private key; gRPC needs it unencrypted"
        ) from None
    except (ValueError, UnsupportedAlgorithm):
        raise TlsFileError(setting, path, f"{path} holds no readable PEM private key") from None


def _spki(key: object) -> bytes:
    public_bytes = getattr(key, "public_bytes", None)
    if public_bytes is None:
        return b""
    der: bytes = public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return der


def load_server_tls(*, cert_file: str, key_file: str, client_ca_file: str) -> ServerTls:
    """Reads and checks the three files; raises :class:`TlsFileError` on the first problem."""
    cert_data = _read("tls.cert_file", cert_file)
    key_data = _read("tls.key_file", key_file)
    ca_data = _read("tls.client_ca_file", client_ca_file)
    server_cert = _certificates("tls.cert_file", cert_file, cert_data)[0]
    key = _private_key("tls.key_file", key_file, key_data)
    if _spki(key.public_key()) != _spki(server_cert.public_key()):
        raise TlsFileError(
            "tls.key_file",
            key_file,
            f"{key_file} does not match the certificate in tls.cert_file ({cert_file}): it is "
            "the private key of another certificate",
        )
    _certificates("tls.client_ca_file", client_ca_file, ca_data)
    return ServerTls(cert_chain=cert_data, private_key=key_data, client_ca=ca_data)
