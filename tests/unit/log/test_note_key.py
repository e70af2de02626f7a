"""The one Ed25519 note-key class (``Ed25519NoteKey``) under its two signature types: a log's
note key (0x01, C2SP signed-note) and a witness's cosignature key (0x04, C2SP
tlog-cosignature) share the key handling, and are never taken for each other."""

from __future__ import annotations

import base64
import hashlib
import pickle

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from rng_service.errors import InvalidArgument
from rng_service.log.cosignature import CosignatureSigner, CosignatureVerifier
from rng_service.log.note import (
    Ed25519NoteSigner,
    InvalidVerifierKey,
    NoteVerifier,
    key_map,
)

_PRIVATE = Ed25519PrivateKey.from_private_bytes(b"\x0b" * 32)
_RAW = _PRIVATE.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def _expected_vkey(name: str, alg: int) -> str:
    """The verifier key by the spec's formula, derived here, not by the code under test."""
    digest = hashlib.sha256(name.encode() + b"\n" + bytes([alg]) + _RAW).digest()
    return f"{name}+{digest[:4].hex()}+{base64.b64encode(bytes([alg]) + _RAW).decode()}"


@pytest.mark.parametrize(("cls", "alg"), [(NoteVerifier, 0x01), (CosignatureVerifier, 0x04)])
def test_each_type_derives_its_key_id_and_round_trips(
    cls: type[NoteVerifier] | type[CosignatureVerifier], alg: int
) -> None:
    verifier = cls("log.example", _PRIVATE.public_key())
    expected = _expected_vkey("log.example", alg)
    assert verifier.verifier_key() == expected
    assert cls.from_verifier_key(expected) == verifier
    assert repr(verifier) == f"{cls.__name__}({expected!r})"


def test_one_key_under_both_types_is_two_different_keys() -> None:
    as_log = NoteVerifier("k", _PRIVATE.public_key())
    as_witness = CosignatureVerifier("k", _PRIVATE.public_key())
    assert as_log != as_witness
    assert as_witness != as_log
    assert as_log.key_id != as_witness.key_id


def test_the_types_keep_their_own_messages() -> None:
    with pytest.raises(InvalidVerifierKey, match=r"witness key name 'a b'"):
        CosignatureVerifier("a b", _PRIVATE.public_key())
    with pytest.raises(InvalidVerifierKey, match=r"key name 'a b'") as caught:
        NoteVerifier("a b", _PRIVATE.public_key())
    assert "witness" not in str(caught.value)
    # A witness key string may carry white space around it (a line of a file); a log key not.
    spaced = " " + _expected_vkey("w", 0x04) + "\n"
    assert CosignatureVerifier.from_verifier_key(spaced).name == "w"
    with pytest.raises(InvalidVerifierKey, match="not base64"):
        NoteVerifier.from_verifier_key(_expected_vkey("w", 0x01) + "\n")


@pytest.mark.parametrize("cls", [Ed25519NoteSigner, CosignatureSigner])
def test_both_signers_hide_the_private_key(
    cls: type[Ed25519NoteSigner] | type[CosignatureSigner],
) -> None:
    signer = cls("s", _PRIVATE)
    assert repr(signer) == f"{cls.__name__}(name='s', key_id={signer.key_id:08x})"
    with pytest.raises(TypeError, match=f"{cls.__name__} holds a private key"):
        pickle.dumps(signer)
    with pytest.raises(InvalidArgument, match="Ed25519"):
        cls("s", object())  # type: ignore[arg-type]


def test_key_map_refuses_two_keys_under_one_name_and_id() -> None:
    one = NoteVerifier("k", _PRIVATE.public_key())
    assert key_map([one, NoteVerifier("k", _PRIVATE.public_key())], field="verifiers") == {
        ("k", one.key_id): one
    }

    class Clash(NoteVerifier):
        """Another key that claims the same name and key ID."""

        __slots__ = ()

        @property
        def key_id(self) -> int:
            return one.key_id

    other = Clash("k", Ed25519PrivateKey.from_private_bytes(b"\x0c" * 32).public_key())
    with pytest.raises(InvalidArgument, match=r"ambiguous witness key k\+") as caught:
        key_map([one, other], field="witnesses", what="witness key")
    assert caught.value.field == "witnesses"
