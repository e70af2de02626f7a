"""Known answers for C2SP tlog-cosignature and the tlog-witness wire format, from independent
sources (tests/vectors/README.md, "tlog_cosignature"): a real checkpoint cosigned by a public
witness, upstream timestamp decodings, the specs' own examples."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from rng_service.log.cosignature import (
    CosignatureVerifier,
    InvalidCosignature,
    parse_cosignature,
    signed_message,
    verify_cosignatures,
)
from rng_service.log.note import (
    InvalidVerifierKey,
    NoteSignature,
    NoteVerifier,
    open_checkpoint,
    parse_note,
)
from rng_service.log.tlog_witness import parse_add_checkpoint, parse_signature_lines

VECTORS: dict[str, Any] = json.loads(
    (
        Path(__file__).parents[2] / "vectors" / "tlog_cosignature" / "cosignature_vectors.json"
    ).read_text(encoding="utf-8")
)


def test_a_real_witness_cosignature_verifies() -> None:
    v = VECTORS["real_cosigned_checkpoint"]
    note = v["note"].encode("utf-8")
    log_key = NoteVerifier.from_verifier_key(v["log_vkey"])
    checkpoint, _ = open_checkpoint(note, [log_key], origin=log_key.name)
    assert checkpoint.size == 1432088532
    witness = CosignatureVerifier.from_verifier_key(v["witness_vkey"])
    # The key ID derived with the 0x04 type byte is the one the published vkey names.
    assert f"{witness.key_id:08x}" == "da77ade7"
    assert witness.verifier_key() == v["witness_vkey"]
    found = verify_cosignatures(note, [witness])
    assert [c.witness for c in found] == [witness]
    # The other witnesses' lines (unknown keys here) and the log's own are ignored.
    assert found[0].line.startswith("— remora.n621.de ")


def test_the_real_cosignature_fails_on_a_changed_checkpoint() -> None:
    v = VECTORS["real_cosigned_checkpoint"]
    witness = CosignatureVerifier.from_verifier_key(v["witness_vkey"])
    changed = v["note"].replace("1432088532", "1432088533", 1).encode("utf-8")
    with pytest.raises(InvalidCosignature, match=r"remora\.n621\.de"):
        verify_cosignatures(changed, [witness])


def test_the_log_key_is_not_a_witness_key_and_the_reverse() -> None:
    v = VECTORS["real_cosigned_checkpoint"]
    # The witness's public key under the log signature type (0x01) has another key ID: a log
    # verifier of the same key would not even match the cosignature line.
    witness = CosignatureVerifier.from_verifier_key(v["witness_vkey"])
    as_note_key = NoteVerifier(witness.name, witness.public_key)
    assert as_note_key.key_id != witness.key_id
    with pytest.raises(InvalidVerifierKey, match="0x04"):
        CosignatureVerifier.from_verifier_key(VECTORS["log_key_is_not_a_cosigner_key"]["vkey"])
    with pytest.raises(InvalidVerifierKey):
        NoteVerifier.from_verifier_key(v["witness_vkey"])


@pytest.mark.parametrize(
    "case", VECTORS["timestamp_of_signature"], ids=lambda c: str(c["timestamp"])
)
def test_timestamp_of_a_cosignature(case: dict[str, Any]) -> None:
    raw = base64.b64decode(case["signature"])
    signature = NoteSignature("w", int.from_bytes(raw[:4], "big"), raw[4:])
    assert parse_cosignature(signature).timestamp == case["timestamp"]


def test_signed_message_of_the_spec() -> None:
    v = VECTORS["signed_message"]
    assert signed_message(v["body"].encode(), v["timestamp"]) == v["message"].encode()


def test_the_specs_add_checkpoint_request_parses() -> None:
    v = VECTORS["add_checkpoint_request"]
    request = parse_add_checkpoint(v["body"].encode("utf-8"))
    assert request.old_size == v["old_size"]
    assert len(request.proof) == v["proof_lines"]
    assert all(len(h) == 32 for h in request.proof)
    note = parse_note(request.note)
    assert note.text.splitlines()[1] == str(v["size"])
    assert len(note.signatures) == 2
    assert request.encode() == v["body"].encode("utf-8")  # and it encodes back byte for byte


def test_the_specs_add_checkpoint_response_parses() -> None:
    v = VECTORS["add_checkpoint_response"]
    lines = parse_signature_lines(v["body"].encode("utf-8"))
    assert [s.name for s in lines] == v["names"]
    assert "".join(s.line() for s in lines) == v["body"]
