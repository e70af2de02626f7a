"""X.509 certificates for mTLS on the gRPC port: a development CA and the certificates it issues.

Owns ``rng-service dev-ca``: a self-signed CA, a server certificate for ``localhost`` and
``127.0.0.1``, and one client certificate per named identity (subject CN and a DNS
subjectAltName both carry the identity, which is what the authorizer matches). Profiles follow
RFC 5280: the CA has basicConstraints CA:TRUE (section 4.2.1.9) and keyCertSign/cRLSign key
usage (section 4.2.1.3); leaf certificates are CA:FALSE with digitalSignature and an
extendedKeyUsage of serverAuth or clientAuth (section 4.2.1.12); validity is notBefore/notAfter
(section 4.1.2.5). Keys are ECDSA P-256, which gRPC's TLS stack accepts on both sides.

Development only: the CA key sits next to the certificates it signs. Production certificates
come from the operator's CA (docs/security.md). This module does no networking and reads no
clock: the caller passes ``now``. Private keys are written unencrypted (gRPC needs the PEM key
in memory) with mode 0600 and never printed.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "IDENTITY_PATTERN",
    "DevCaFiles",
    "IssuedCert",
    "issue_ca",
    "issue_client",
    "issue_server",
    "write_dev_ca",
]

#: Identities the development CA names files after: letters, digits, ".", "_" and "-".
IDENTITY_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")

_SERVER_HOSTS = ("localhost", "127.0.0.1")


@dataclass(frozen=True, repr=False)
class IssuedCert:
    """A certificate and its private key. ``repr`` shows the subject only, never the key."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def key_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def __repr__(self) -> str:
        return f"IssuedCert(subject={self.cert.subject.rfc4514_string()!r})"


def _builder(
    subject: str, issuer: x509.Name | None, key: ec.EllipticCurvePrivateKey,
    not_before: dt.datetime, not_after: dt.datetime,
) -> x509.CertificateBuilder:  # fmt: skip
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer or name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    """RFC 5280 section 4.2.1.3: a CA signs certificates and CRLs; a leaf signs handshakes."""
    return x509.KeyUsage(
        digital_signature=not ca,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def issue_ca(name: str, *, now: dt.datetime, days: int = 365) -> IssuedCert:
    """A self-signed CA certificate (RFC 5280 section 4.2.1.9: CA:TRUE, path length 0)."""
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        _builder(name, None, key, now - dt.timedelta(minutes=5), now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .sign(key, hashes.SHA256())
    )
    return IssuedCert(cert, key)


def _leaf(
    ca: IssuedCert, subject: str, sans: list[x509.GeneralName], usage: x509.ObjectIdentifier,
    not_before: dt.datetime, not_after: dt.datetime,
) -> IssuedCert:  # fmt: skip
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        _builder(subject, ca.cert.subject, key, not_before, not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(ca=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()),
            critical=False,
        )
        .sign(ca.key, hashes.SHA256())
    )
    return IssuedCert(cert, key)


def issue_server(
    ca: IssuedCert, *, now: dt.datetime, days: int = 365, hosts: tuple[str, ...] = _SERVER_HOSTS
) -> IssuedCert:
    """A serverAuth certificate whose subjectAltNames are ``hosts`` (DNS names or IP addresses)."""
    sans: list[x509.GeneralName] = []
    for host in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    return _leaf(
        ca, hosts[0], sans, ExtendedKeyUsageOID.SERVER_AUTH,
        now - dt.timedelta(minutes=5), now + dt.timedelta(days=days),
    )  # fmt: skip


def issue_client(
    ca: IssuedCert,
    identity: str,
    *,
    now: dt.datetime,
    days: int = 365,
    not_after: dt.datetime | None = None,
) -> IssuedCert:
    """A clientAuth certificate for ``identity`` (subject CN and a DNS subjectAltName).

    ``not_after`` overrides the end of validity (tests make expired certificates with it)."""
    end = not_after if not_after is not None else now + dt.timedelta(days=days)
    start = min(now - dt.timedelta(minutes=5), end - dt.timedelta(days=1))
    return _leaf(
        ca, identity, [x509.DNSName(identity)], ExtendedKeyUsageOID.CLIENT_AUTH, start, end
    )


@dataclass(frozen=True)
class DevCaFiles:
    """Paths written by :func:`write_dev_ca`."""

    ca_cert: Path
    ca_key: Path
    server_cert: Path
    server_key: Path
    clients: dict[str, tuple[Path, Path]]


def _write(path: Path, data: bytes, *, private: bool, overwrite: bool) -> None:
    """Writes ``data`` with mode 0600 (``private``) or 0644. A new file is created with that
    mode; an existing one (``overwrite``) gets it before a byte is written, so a private key
    never sits in a file that others may read (os.open's mode applies to new files only)."""
    mode = 0o600 if private else 0o644
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
    fd = os.open(path, flags, mode)
    try:
        os.fchmod(fd, mode)
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def write_dev_ca(
    out: Path,
    clients: list[str],
    *,
    now: dt.datetime,
    days: int = 365,
    overwrite: bool = False,
) -> DevCaFiles:
    """Writes a development CA, a localhost server certificate and one client certificate per
    identity into ``out``: ``ca.pem``/``ca.key``, ``server.pem``/``server.key`` and
    ``<identity>.pem``/``<identity>.key``. Keys get mode 0600. Raises ValueError for an identity
    outside :data:`IDENTITY_PATTERN` or a duplicate, FileExistsError when a file exists and
    ``overwrite`` is false."""
    for identity in clients:
        if not IDENTITY_PATTERN.fullmatch(identity) or identity in ("ca", "server"):
            raise ValueError(
                f"client identity {identity!r}: use 1 to 64 letters, digits, '.', '_' or '-' "
                "(not 'ca' or 'server')"
            )
    if len(set(clients)) != len(clients):
        raise ValueError("client identities must be distinct")
    out.mkdir(parents=True, exist_ok=True)
    ca = issue_ca("rng-service development CA", now=now, days=days)
    server = issue_server(ca, now=now, days=days)
    files = DevCaFiles(
        ca_cert=out / "ca.pem",
        ca_key=out / "ca.key",
        server_cert=out / "server.pem",
        server_key=out / "server.key",
        clients={c: (out / f"{c}.pem", out / f"{c}.key") for c in clients},
    )
    planned = [files.ca_cert, files.ca_key, files.server_cert, files.server_key]
    planned += [p for pair in files.clients.values() for p in pair]
    if not overwrite:
        existing = [p for p in planned if p.exists()]
        if existing:
            raise FileExistsError(f"{existing[0]} exists")
    _write(files.ca_cert, ca.cert_pem(), private=False, overwrite=overwrite)
    _write(files.ca_key, ca.key_pem(), private=True, overwrite=overwrite)
    _write(files.server_cert, server.cert_pem(), private=False, overwrite=overwrite)
    _write(files.server_key, server.key_pem(), private=True, overwrite=overwrite)
    for identity, (cert_path, key_path) in files.clients.items():
        issued = issue_client(ca, identity, now=now, days=days)
        _write(cert_path, issued.cert_pem(), private=False, overwrite=overwrite)
        _write(key_path, issued.key_pem(), private=True, overwrite=overwrite)
    return files
