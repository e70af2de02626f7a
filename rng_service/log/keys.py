"""Ed25519 key files for the log's checkpoint signer.

Owns generating a key pair and reading it back: the private key as a PKCS#8 PEM file (optionally
encrypted with a passphrase, ``BestAvailableEncryption``), created atomically with mode 0600 and
never replacing an existing file unless told to; the public key as a SubjectPublicKeyInfo PEM
file and as the C2SP signed-note verifier-key string (``<name>+<key id>+<base64 key>``, see
:mod:`rng_service.log.note`) that verifiers configure.

Failures are domain errors naming the file and what to do (missing file, wrong or missing
passphrase, not an Ed25519 key), never a traceback from ``cryptography``. Private key material
is never logged, put in an exception message or shown by ``repr``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from rng_service.errors import FailedPrecondition, InvalidArgument
from rng_service.log.cosignature import CosignatureSigner
from rng_service.log.note import (
    Ed25519KeySigner,
    Ed25519NoteSigner,
    InvalidVerifierKey,
    NoteVerifier,
)

__all__ = [
    "KeyFileError",
    "KeyFileExists",
    "KeyFileNotFound",
    "KeyPairInfo",
    "NotEd25519Key",
    "WrongPassphrase",
    "generate_key_pair",
    "load_private_key",
    "load_public_key",
    "load_signer",
    "load_verifier",
    "load_verifier_keys",
    "public_key_pem",
    "write_private_key",
]

PRIVATE_KEY_MODE = 0o600
PUBLIC_KEY_MODE = 0o644


class KeyFileError(FailedPrecondition):
    """A key file cannot be used (see the subclasses)."""


class KeyFileNotFound(KeyFileError):
    """The key file does not exist."""


class KeyFileExists(KeyFileError):
    """Refusing to replace an existing key file."""


class WrongPassphrase(KeyFileError):
    """The private key is encrypted and the passphrase is missing or wrong (or vice versa)."""


class NotEd25519Key(KeyFileError):
    """The file holds a key, or data, that is not an Ed25519 key."""


@dataclass(frozen=True, slots=True)
class KeyPairInfo:
    """Where :func:`generate_key_pair` wrote the key pair, and the public identity."""

    private_key_path: Path
    public_key_path: Path
    verifier_key_path: Path
    verifier_key: str
    key_id: int


def public_key_pem(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _atomic_write(path: Path, data: bytes, *, mode: int, overwrite: bool) -> None:
    """Writes ``data`` to ``path`` with ``mode`` so that no reader ever sees a partial file.

    The data goes to a 0600 temporary file in the same directory first, is fsynced, then is
    renamed over (``overwrite``) or hard-linked to (no-clobber, atomic) the final name.
    """
    directory = path.parent
    if not directory.is_dir():
        raise KeyFileNotFound(f"directory {directory} for key file {path.name} does not exist")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as e:
        raise KeyFileError(f"cannot create a file in {directory}: {e.strerror}") from e
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError as e:
                raise KeyFileExists(
                    f"{path} already exists; refusing to replace a key file (remove it first)"
                ) from e
    except OSError as e:
        raise KeyFileError(f"cannot write key file {path}: {e.strerror}") from e
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _encryption(passphrase: bytes | None) -> serialization.KeySerializationEncryption:
    if passphrase is None:
        return serialization.NoEncryption()
    if not passphrase:
        raise InvalidArgument("passphrase", "is empty; give a non-empty one or None")
    return serialization.BestAvailableEncryption(passphrase)


def write_private_key(
    path: str | os.PathLike[str],
    key: Ed25519PrivateKey,
    *,
    passphrase: bytes | None = None,
    overwrite: bool = False,
) -> None:
    """Writes ``key`` as PKCS#8 PEM, mode 0600, atomically; encrypted if ``passphrase``."""
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, _encryption(passphrase)
    )
    _atomic_write(Path(path), pem, mode=PRIVATE_KEY_MODE, overwrite=overwrite)


def generate_key_pair(
    path: str | os.PathLike[str],
    *,
    name: str,
    passphrase: bytes | None = None,
    overwrite: bool = False,
    cosigner: bool = False,
) -> KeyPairInfo:
    """Generates an Ed25519 key pair for the signer key ``name``.

    Writes the private key to ``path`` (PKCS#8 PEM, 0600), the public key to ``<path>.pub``
    (PEM) and the verifier key to ``<path>.vkey`` (one line). Refuses to replace existing files
    unless ``overwrite``. The key name must be a valid note key name (no spaces, no '+').
    ``cosigner``: a witness's key, whose verifier key has the C2SP tlog-cosignature type 0x04
    (``cosignature/v1``) instead of the log signature type 0x01.
    """
    private_path = Path(path)
    public_path = private_path.with_name(private_path.name + ".pub")
    vkey_path = private_path.with_name(private_path.name + ".vkey")
    key = Ed25519PrivateKey.generate()
    # Validates the name before anything is written.
    signer: Ed25519KeySigner[Any] = (
        CosignatureSigner(name, key) if cosigner else Ed25519NoteSigner(name, key)
    )
    if not overwrite:
        for p in (private_path, public_path, vkey_path):
            if p.exists():
                raise KeyFileExists(f"{p} already exists; refusing to replace a key file")
    write_private_key(private_path, key, passphrase=passphrase, overwrite=overwrite)
    _atomic_write(
        public_path, public_key_pem(key.public_key()), mode=PUBLIC_KEY_MODE, overwrite=overwrite
    )
    vkey = signer.verifier().verifier_key()
    _atomic_write(
        vkey_path, (vkey + "\n").encode("ascii"), mode=PUBLIC_KEY_MODE, overwrite=overwrite
    )
    return KeyPairInfo(
        private_key_path=private_path,
        public_key_path=public_path,
        verifier_key_path=vkey_path,
        verifier_key=vkey,
        key_id=signer.key_id,
    )


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError as e:
        raise KeyFileNotFound(f"{what} file {path} does not exist") from e
    except IsADirectoryError as e:
        raise KeyFileError(f"{what} file {path} is a directory") from e
    except OSError as e:
        raise KeyFileError(f"cannot read {what} file {path}: {e.strerror}") from e


def load_private_key(
    path: str | os.PathLike[str], passphrase: bytes | None = None
) -> Ed25519PrivateKey:
    """Reads an Ed25519 private key from a PEM (PKCS#8) file, decrypting with ``passphrase``."""
    path = Path(path)
    data = _read(path, "private key")
    try:
        key = serialization.load_pem_private_key(data, password=passphrase)
    except TypeError as e:
        if passphrase is None:
            raise WrongPassphrase(
                f"private key file {path} is encrypted: a passphrase is needed"
            ) from e
        raise WrongPassphrase(
            f"private key file {path} is not encrypted, but a passphrase was given"
        ) from e
    except ValueError as e:
        if passphrase is not None and b"ENCRYPTED" in data:
            raise WrongPassphrase(
                f"cannot decrypt private key file {path}: wrong passphrase"
            ) from e
        raise NotEd25519Key(f"{path} is not a PEM private key file") from e
    except UnsupportedAlgorithm as e:
        raise NotEd25519Key(f"{path} holds a key of an unsupported type") from e
    if not isinstance(key, Ed25519PrivateKey):
        raise NotEd25519Key(
            f"{path} holds a {type(key).__name__.lstrip('_')}, not an Ed25519 private key"
        )
    return key


def load_public_key(path: str | os.PathLike[str]) -> Ed25519PublicKey:
    """Reads an Ed25519 public key from a SubjectPublicKeyInfo PEM file."""
    path = Path(path)
    data = _read(path, "public key")
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm) as e:
        raise NotEd25519Key(f"{path} is not a PEM public key file") from e
    if not isinstance(key, Ed25519PublicKey):
        raise NotEd25519Key(f"{path} holds a {type(key).__name__}, not an Ed25519 public key")
    return key


def load_signer(
    path: str | os.PathLike[str], *, name: str, passphrase: bytes | None = None
) -> Ed25519NoteSigner:
    """The checkpoint signer for key ``name`` from the private key file at ``path``."""
    return Ed25519NoteSigner(name, load_private_key(path, passphrase))


def load_verifier(path: str | os.PathLike[str], *, name: str) -> NoteVerifier:
    """The note verifier for key ``name`` from a public key PEM file."""
    return NoteVerifier(name, load_public_key(path))


def load_verifier_keys(
    items: Sequence[str], *, base_dir: str | os.PathLike[str]
) -> list[NoteVerifier]:
    """Note verifiers from verifier-key strings or ``.vkey`` files (one key on the first line).

    An item containing ``+`` that is not an existing file is parsed as a verifier key
    (``<name>+<key id>+<base64>``); anything else is a file path, relative to ``base_dir``.
    Raises :class:`InvalidVerifierKey` or :class:`KeyFileError` naming the item.
    """
    verifiers: list[NoteVerifier] = []
    for item in items:
        path = Path(base_dir) / item
        if "+" in item and not path.is_file():
            verifiers.append(NoteVerifier.from_verifier_key(item))
            continue
        text = _read(path, "verifier key").decode("utf-8", errors="replace").strip()
        try:
            verifiers.append(NoteVerifier.from_verifier_key(text.splitlines()[0] if text else ""))
        except InvalidVerifierKey as e:
            raise InvalidVerifierKey(
                f"{path} does not hold a valid verifier key on its first line"
            ) from e
    return verifiers
