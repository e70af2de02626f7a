"""Behaviour of :mod:`rng_service.log.note`: C2SP signed notes and tlog checkpoints."""

from __future__ import annotations

import base64
import hashlib
import pickle

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service.errors import IntegrityError, InvalidArgument
from rng_service.log import note
from rng_service.log.merkle import EMPTY_ROOT

ROOT = bytes(range(32))


def _signer(name: str = "casino.example/log", seed: int = 1) -> note.Ed25519NoteSigner:
    return note.Ed25519NoteSigner(name, Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32))


def test_error_classes() -> None:
    assert issubclass(note.MalformedNote, IntegrityError)
    assert issubclass(note.MalformedCheckpoint, note.MalformedNote)
    assert issubclass(note.InvalidNoteSignature, IntegrityError)
    assert issubclass(note.UnverifiedNote, IntegrityError)
    assert issubclass(note.InvalidVerifierKey, InvalidArgument)


def test_key_id_formula() -> None:
    signer = _signer()
    raw = signer.verifier_key().split("+", 2)[2]
    public = base64.b64decode(raw)[1:]
    digest = hashlib.sha256(b"casino.example/log\n\x01" + public).digest()
    assert signer.key_id == int.from_bytes(digest[:4], "big")
    assert signer.verifier_key().startswith(f"casino.example/log+{signer.key_id:08x}+A")


def test_sign_and_open_round_trip_with_two_signers() -> None:
    a, b = _signer("a.example/log", 1), _signer("b.example/witness", 2)
    msg = note.sign_note(b"hello\nworld\n", [a, b])
    lines = msg.decode().split("\n")
    assert lines[:3] == ["hello", "world", ""]
    assert lines[3].startswith("\u2014 a.example/log ")
    assert lines[4].startswith("\u2014 b.example/witness ")
    assert note.open_note(msg, [a.verifier(), b.verifier()]).key_names == (
        "a.example/log",
        "b.example/witness",
    )
    assert note.open_note(msg, [b.verifier()]) == ("hello\nworld\n", ("b.example/witness",))


def test_text_with_blank_lines_is_kept() -> None:
    msg = note.sign_note("a\n\nb\n", [_signer()])
    assert note.open_note(msg, [_signer().verifier()]).text == "a\n\nb\n"


def test_altered_text_fails() -> None:
    msg = note.sign_note("size 5\n", [_signer()])
    with pytest.raises(note.InvalidNoteSignature, match="invalid signature"):
        note.open_note(msg.replace(b"5", b"6", 1), [_signer().verifier()])


def test_known_name_with_other_key_is_ignored_not_failed() -> None:
    # Same name, different key: different key ID, so an unknown key (C2SP: ignore it).
    impostor = _signer(seed=9)
    msg = note.sign_note("x\n", [impostor])
    with pytest.raises(note.UnverifiedNote, match="no signature from a known key"):
        note.open_note(msg, [_signer().verifier()])


def test_repeated_identical_verifier_is_accepted() -> None:
    v = _signer().verifier()
    assert note.open_note(note.sign_note("x\n", [_signer()]), [v, v]).key_names == (
        "casino.example/log",
    )


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("no newline", note.MalformedNote),
        ("bad \x07 char\n", note.MalformedNote),
        (b"\xff\n", note.MalformedNote),
    ],
)
def test_sign_rejects_bad_text(text: str | bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        note.sign_note(text, [_signer()])


def test_sign_needs_a_valid_signer() -> None:
    with pytest.raises(InvalidArgument, match="signers"):
        note.sign_note("x\n", [])
    with pytest.raises(InvalidArgument, match="key name"):
        _signer("bad name")
    with pytest.raises(InvalidArgument, match="key name"):
        _signer("a+b")


def test_signer_never_shows_or_pickles_private_key() -> None:
    key = Ed25519PrivateKey.from_private_bytes(b"\x07" * 32)
    signer = note.Ed25519NoteSigner("n", key)
    assert "07070707" not in repr(signer)
    assert "BwcH" not in repr(signer)
    with pytest.raises(TypeError, match="private key"):
        pickle.dumps(signer)


def test_signer_needs_ed25519_key() -> None:
    with pytest.raises(InvalidArgument, match="Ed25519"):
        note.Ed25519NoteSigner("n", object())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "message",
    [
        b"text\n\n\xe2\x80\x94 name AAAA\n",  # 3 bytes of signature: shorter than key ID + 1
        b"text\n\n\xe2\x80\x94 name not*base64\n",
        b"text\n\n- name AAAAAAAA\n",
        b"text\n\n\xe2\x80\x94 name\n",
        b"text\n\n\xe2\x80\x94  AAAAAAAA\n",
    ],
)
def test_parse_rejects_malformed_signature_lines(message: bytes) -> None:
    with pytest.raises(note.MalformedNote):
        note.parse_note(message)


def test_parse_note_keeps_all_signatures() -> None:
    a, b = _signer("a", 1), _signer("b", 2)
    msg = note.sign_note("t\n", [a, b])
    parsed = note.parse_note(msg)
    assert parsed.text == "t\n"
    assert [(s.name, s.key_id) for s in parsed.signatures] == [("a", a.key_id), ("b", b.key_id)]
    assert parsed.encode() == msg


# -- checkpoints -------------------------------------------------------------------------------


def test_checkpoint_body_matches_c2sp_example_layout() -> None:
    cp = note.Checkpoint(origin="example.com/behind-the-sofa", size=20852163, root_hash=ROOT)
    assert cp.body() == (
        b"example.com/behind-the-sofa\n20852163\n" + base64.b64encode(ROOT) + b"\n"
    )
    assert note.Checkpoint.parse(cp.body()) == cp
    assert note.Checkpoint.parse(cp.body().decode()) == cp


def test_checkpoint_c2sp_example_text_parses() -> None:
    text = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
    cp = note.Checkpoint.parse(text)
    assert (cp.origin, cp.size, len(cp.root_hash)) == ("example.com/behind-the-sofa", 20852163, 32)
    assert cp.body().decode() == text


def test_checkpoint_with_extensions_and_empty_tree() -> None:
    cp = note.Checkpoint(origin="o", size=0, root_hash=EMPTY_ROOT, extensions=("ext 1", "e2"))
    body = cp.body()
    assert body.endswith(b"\next 1\ne2\n")
    assert note.Checkpoint.parse(body) == cp


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("o\n1\n", "lines"),
        ("o\n1\n" + base64.b64encode(ROOT).decode(), "newline"),
        ("\n1\n" + base64.b64encode(ROOT).decode() + "\n", "origin"),
        ("o\n01\n" + base64.b64encode(ROOT).decode() + "\n", "leading zeros"),
        ("o\n-1\n" + base64.b64encode(ROOT).decode() + "\n", "decimal"),
        ("o\n１\n" + base64.b64encode(ROOT).decode() + "\n", "decimal"),
        ("o\n1\n" + base64.b64encode(ROOT[:31]).decode() + "\n", "31 bytes"),
        ("o\n1\nnot base64!\n", "not base64"),
        ("o\n18446744073709551616\n" + base64.b64encode(ROOT).decode() + "\n", "exceeds"),
        ("o\n1\n" + base64.b64encode(ROOT).decode() + "\n\n", "extension"),
        (b"o\n1\n\xff\n", "UTF-8"),
    ],
)
def test_malformed_checkpoints(text: str | bytes, message: str) -> None:
    with pytest.raises(note.MalformedCheckpoint, match=message):
        note.Checkpoint.parse(text)


def test_checkpoint_constructor_validates() -> None:
    with pytest.raises(note.MalformedCheckpoint):
        note.Checkpoint(origin="a\nb", size=1, root_hash=ROOT)
    with pytest.raises(note.MalformedCheckpoint):
        note.Checkpoint(origin="o", size=-1, root_hash=ROOT)
    with pytest.raises(note.MalformedCheckpoint):
        note.Checkpoint(origin="o", size=1, root_hash=ROOT, extensions=("",))


def test_open_checkpoint() -> None:
    signer = _signer()
    cp = note.Checkpoint(origin="casino.example/log", size=7, root_hash=ROOT)
    msg = note.sign_note(cp.body(), [signer])
    got, opened = note.open_checkpoint(msg, [signer.verifier()], origin="casino.example/log")
    assert got == cp
    assert opened.key_names == ("casino.example/log",)
    with pytest.raises(note.MalformedCheckpoint, match="expected 'other'"):
        note.open_checkpoint(msg, [signer.verifier()], origin="other")
    bad = note.sign_note(b"not a checkpoint\n", [signer])
    with pytest.raises(note.MalformedCheckpoint):
        note.open_checkpoint(bad, [signer.verifier()])
