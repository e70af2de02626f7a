"""The [tls] files are checked with cryptography before gRPC sees them: each problem names the
setting and the file."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from rng_service.security.certs import write_dev_ca
from rng_service.security.tls_files import TlsFileError, load_server_tls

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@pytest.fixture
def ca(tmp_path: Path) -> Path:
    write_dev_ca(tmp_path / "a", ["c1"], now=NOW, days=30)
    write_dev_ca(tmp_path / "b", ["c1"], now=NOW, days=30)
    return tmp_path


def files(ca: Path, cert: str = "a/server.pem", key: str = "a/server.key",
          client_ca: str = "a/ca.pem") -> dict[str, str]:  # fmt: skip
    return {"cert_file": str(ca / cert), "key_file": str(ca / key),
            "client_ca_file": str(ca / client_ca)}  # fmt: skip


def test_a_matching_pair_loads_and_hides_its_key(ca: Path) -> None:
    tls = load_server_tls(**files(ca))
    assert tls.cert_chain.startswith(b"-----BEGIN CERTIFICATE-----")
    assert b"PRIVATE KEY" in tls.private_key
    assert "PRIVATE" not in repr(tls)


def test_a_key_of_another_certificate(ca: Path) -> None:
    with pytest.raises(TlsFileError) as info:
        load_server_tls(**files(ca, key="b/server.key"))
    assert info.value.setting == "tls.key_file"
    assert info.value.path == str(ca / "b/server.key")
    assert str(info.value).startswith(
        f"tls.key_file: {ca / 'b/server.key'} does not match the certificate in tls.cert_file"
    )


@pytest.mark.parametrize(
    ("changes", "setting", "problem"),
    [
        ({"cert": "absent.pem"}, "tls.cert_file", "cannot read"),
        ({"cert": "a/server.key"}, "tls.cert_file", "holds no readable PEM certificate"),
        ({"key": "a/server.pem"}, "tls.key_file", "holds no readable PEM private key"),
        ({"client_ca": "a/server.key"}, "tls.client_ca_file", "holds no readable PEM"),
        ({"client_ca": "a"}, "tls.client_ca_file", "cannot read"),  # a directory
    ],
)
def test_each_problem_names_its_setting_and_file(
    ca: Path, changes: dict[str, str], setting: str, problem: str
) -> None:
    with pytest.raises(TlsFileError, match=problem) as info:
        load_server_tls(**files(ca, **changes))
    assert info.value.setting == setting
    assert info.value.path in str(info.value)


def test_an_encrypted_key_is_refused(ca: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    )
    (ca / "enc.key").write_bytes(pem)
    with pytest.raises(TlsFileError, match="encrypted private key; gRPC needs it unencrypted"):
        load_server_tls(**files(ca, key="enc.key"))
