"""Known answers for signed notes: golang.org/x/mod sumdb/note test vectors (see
tests/vectors/README.md, section signed_note), in their upstream text form."""

from __future__ import annotations

from pathlib import Path

import pytest

from rng_service.log import note

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "signed_note"
TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)


def _read(name: str) -> str:
    return (VECTORS / name).read_text(encoding="utf-8").rstrip("\n")


PETER_VKEY = _read("PeterNeumann.vkey")
ENOCH_VKEY = _read("EnochRoot.vkey")
PETER_SKEY = _read("PeterNeumann.skey")
SIGNED = (VECTORS / "sign.note").read_bytes()
TWO_SIGNATURES = (VECTORS / "open_two_signatures.note").read_bytes()


def test_verifier_key_parses_and_round_trips() -> None:
    v = note.NoteVerifier.from_verifier_key(PETER_VKEY)
    assert v.name == "PeterNeumann"
    assert v.key_id == 0xC74F20A3
    assert v.verifier_key() == PETER_VKEY


def test_signer_key_matches_verifier_key() -> None:
    signer = note.Ed25519NoteSigner.from_signer_key(PETER_SKEY)
    assert signer.key_id == 0xC74F20A3
    assert signer.verifier_key() == PETER_VKEY
    assert "AYEKFALV" not in repr(signer)


def test_sign_reproduces_upstream_note() -> None:
    # Ed25519 is deterministic (RFC 8032), so the signed note is byte-for-byte Go's output.
    signer = note.Ed25519NoteSigner.from_signer_key(PETER_SKEY)
    assert note.sign_note(TEXT, [signer]) == SIGNED


def test_open_upstream_note() -> None:
    opened = note.open_note(SIGNED, [note.NoteVerifier.from_verifier_key(PETER_VKEY)])
    assert opened.text == TEXT
    assert opened.key_names == ("PeterNeumann",)


def test_open_two_signatures_with_one_or_both_keys() -> None:
    peter = note.NoteVerifier.from_verifier_key(PETER_VKEY)
    enoch = note.NoteVerifier.from_verifier_key(ENOCH_VKEY)
    assert note.open_note(TWO_SIGNATURES, [peter]).key_names == ("PeterNeumann",)
    assert note.open_note(TWO_SIGNATURES, [enoch]).key_names == ("EnochRoot",)
    assert note.open_note(TWO_SIGNATURES, [peter, enoch]).key_names == (
        "PeterNeumann",
        "EnochRoot",
    )
    with pytest.raises(note.UnverifiedNote, match=r"PeterNeumann\+c74f20a3"):
        note.open_note(TWO_SIGNATURES, [])


def test_open_rejects_upstream_invalid_signature() -> None:
    # TestOpen's "Invalid signature" case: 'ABCD' spliced into the base64 signature.
    text_end = SIGNED.index("\u2014".encode())
    line = SIGNED[text_end:].decode()
    bad = SIGNED[:text_end] + (line[:60] + "ABCD" + line[60:]).encode()
    with pytest.raises(note.InvalidNoteSignature, match=r"PeterNeumann\+c74f20a3"):
        note.open_note(bad, [note.NoteVerifier.from_verifier_key(PETER_VKEY)])


def _manglings(key: str) -> list[str]:
    out = {key[i:j] for i in range(len(key) + 1) for j in range(i + 1, len(key) + 1)}
    out.discard(key)
    for i in range(len(key)):
        out.add(key[:i] + chr(ord(key[i]) + 1) + key[i + 1 :])
    return sorted(out)


def test_verifier_key_manglings_rejected() -> None:
    # TestNewVerifier: every proper substring and every one-character increment fails.
    for bad in [
        *_manglings(PETER_VKEY),
        "PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==",
        "PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
    ]:
        with pytest.raises(note.InvalidVerifierKey):
            note.NoteVerifier.from_verifier_key(bad)


def test_signer_key_manglings_rejected() -> None:
    for bad in _manglings(PETER_SKEY):
        with pytest.raises(note.InvalidVerifierKey):
            note.Ed25519NoteSigner.from_signer_key(bad)


@pytest.mark.parametrize(
    "message",
    [
        TEXT,
        TEXT + "\n",
        SIGNED.decode()[:-1],
        "\x01" + SIGNED.decode(),
        TEXT
        + "\n\u2014 Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNX"
        + "gKvqfqdngotpRZb6KE6RyyBwJnAM=",
        SIGNED.decode() + "Unexpected line.\n",
    ],
    ids=["no-sigs", "blank-only", "no-final-newline", "control-char", "bad-name", "extra-line"],
)
def test_upstream_malformed_notes(message: str) -> None:
    with pytest.raises(note.MalformedNote):
        note.open_note(message.encode(), [note.NoteVerifier.from_verifier_key(PETER_VKEY)])


def test_invalid_utf8_is_malformed() -> None:
    with pytest.raises(note.MalformedNote, match="UTF-8"):
        note.open_note(b"\xff" + SIGNED, [note.NoteVerifier.from_verifier_key(PETER_VKEY)])


def test_too_many_signatures() -> None:
    line = SIGNED[SIGNED.index("\u2014".encode()) :]
    message = TEXT.encode() + b"\n" + line * 101
    with pytest.raises(note.MalformedNote, match="at most 100"):
        note.open_note(message, [note.NoteVerifier.from_verifier_key(PETER_VKEY)])
    # Go's note.Open counts repeated lines of one key within the limit once; this project is
    # stricter (docs/log-format.md, "Opening a signed note"; strict_open.json): refused.
    with pytest.raises(note.InvalidNoteSignature, match="two signature lines of key Peter"):
        note.open_note(
            TEXT.encode() + b"\n" + line * 3, [note.NoteVerifier.from_verifier_key(PETER_VKEY)]
        )
