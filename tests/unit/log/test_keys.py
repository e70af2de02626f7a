"""Behaviour of :mod:`rng_service.log.keys`: Ed25519 key files for the checkpoint signer."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service.errors import FailedPrecondition, InvalidArgument
from rng_service.log import keys, note

NAME = "casino.example/log"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_generate_writes_private_public_and_verifier_key(tmp_path: Path) -> None:
    path = tmp_path / "signer.pem"
    info = keys.generate_key_pair(path, name=NAME)
    assert info.private_key_path == path
    assert _mode(path) == 0o600
    assert path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    assert info.public_key_path == tmp_path / "signer.pem.pub"
    assert info.public_key_path.read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----")
    assert info.verifier_key_path.read_text() == info.verifier_key + "\n"
    assert info.verifier_key.startswith(f"{NAME}+{info.key_id:08x}+")
    # No temporary files are left behind.
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "signer.pem",
        "signer.pem.pub",
        "signer.pem.vkey",
    ]

    signer = keys.load_signer(path, name=NAME)
    verifier = note.NoteVerifier.from_verifier_key(info.verifier_key)
    assert keys.load_verifier(info.public_key_path, name=NAME) == verifier
    msg = note.sign_note("hello\n", [signer])
    assert note.open_note(msg, [verifier]).key_names == (NAME,)


def test_private_key_mode_ignores_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        keys.generate_key_pair(tmp_path / "k.pem", name=NAME)
    finally:
        os.umask(old)
    assert _mode(tmp_path / "k.pem") == 0o600


def test_passphrase_round_trip_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "enc.pem"
    info = keys.generate_key_pair(path, name=NAME, passphrase=b"correct horse")
    assert b"ENCRYPTED" in path.read_bytes()
    key = keys.load_private_key(path, b"correct horse")
    assert note.Ed25519NoteSigner(NAME, key).verifier_key() == info.verifier_key
    with pytest.raises(keys.WrongPassphrase, match="wrong passphrase"):
        keys.load_private_key(path, b"battery staple")
    with pytest.raises(keys.WrongPassphrase, match="passphrase is needed"):
        keys.load_private_key(path)


def test_passphrase_given_for_plain_key(tmp_path: Path) -> None:
    keys.generate_key_pair(tmp_path / "p.pem", name=NAME)
    with pytest.raises(keys.WrongPassphrase, match="not encrypted"):
        keys.load_private_key(tmp_path / "p.pem", b"x")


def test_empty_passphrase_rejected_before_writing(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="passphrase"):
        keys.generate_key_pair(tmp_path / "k.pem", name=NAME, passphrase=b"")
    assert list(tmp_path.iterdir()) == []


def test_refuses_to_replace_unless_told(tmp_path: Path) -> None:
    path = tmp_path / "k.pem"
    first = keys.generate_key_pair(path, name=NAME)
    before = path.read_bytes()
    with pytest.raises(keys.KeyFileExists, match="already exists"):
        keys.generate_key_pair(path, name=NAME)
    assert path.read_bytes() == before
    second = keys.generate_key_pair(path, name=NAME, overwrite=True)
    assert second.verifier_key != first.verifier_key
    assert _mode(path) == 0o600
    with pytest.raises(keys.KeyFileExists):
        keys.write_private_key(path, Ed25519PrivateKey.generate())


def test_invalid_name_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="key name"):
        keys.generate_key_pair(tmp_path / "k.pem", name="has space")
    assert list(tmp_path.iterdir()) == []


def test_missing_files_and_directories(tmp_path: Path) -> None:
    with pytest.raises(keys.KeyFileNotFound, match="does not exist"):
        keys.load_private_key(tmp_path / "nope.pem")
    with pytest.raises(keys.KeyFileNotFound, match="does not exist"):
        keys.load_public_key(tmp_path / "nope.pub")
    with pytest.raises(keys.KeyFileNotFound, match="directory"):
        keys.generate_key_pair(tmp_path / "no" / "k.pem", name=NAME)
    with pytest.raises(keys.KeyFileError, match="is a directory"):
        keys.load_private_key(tmp_path)


def test_not_ed25519(tmp_path: Path) -> None:
    ec = generate_private_key(SECP256R1())
    ec_path = tmp_path / "ec.pem"
    ec_path.write_bytes(
        ec.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    with pytest.raises(keys.NotEd25519Key, match="not an Ed25519 private key"):
        keys.load_private_key(ec_path)
    ec_pub = tmp_path / "ec.pub"
    ec_pub.write_bytes(
        ec.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    with pytest.raises(keys.NotEd25519Key, match="not an Ed25519 public key"):
        keys.load_public_key(ec_pub)
    garbage = tmp_path / "garbage.pem"
    garbage.write_bytes(b"not a key at all\n")
    with pytest.raises(keys.NotEd25519Key, match="not a PEM private key"):
        keys.load_private_key(garbage)
    with pytest.raises(keys.NotEd25519Key, match="not a PEM public key"):
        keys.load_public_key(garbage)


def test_errors_are_domain_errors_without_key_material(tmp_path: Path) -> None:
    path = tmp_path / "k.pem"
    keys.generate_key_pair(path, name=NAME, passphrase=b"pw")
    pem = path.read_text()
    body = "".join(pem.splitlines()[1:-1])
    with pytest.raises(FailedPrecondition) as info:
        keys.load_private_key(path, b"wrong")
    assert body[:16] not in str(info.value)
    signer = keys.load_signer(path, name=NAME, passphrase=b"pw")
    assert body[:16] not in repr(signer)
    assert "PRIVATE" not in repr(signer)
