"""Our own signed-note vectors (tests/vectors/signed_note/strict_open.json, written by
gen_strict_open.py with ``cryptography`` alone), where this project is stricter than Go's
``note.Open``: every line of a known log key is verified whatever the order, any bad one fails
the note, two lines of one log key are refused; every cosignature line of a known witness is
verified, the newest kept. The page's tests (tests/integration/test_verify_page.py) read the
same file. A generator rerun must reproduce the file byte for byte."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rng_service.errors import IntegrityError
from rng_service.log.cosignature import CosignatureVerifier, verify_cosignatures
from rng_service.log.note import InvalidNoteSignature, NoteVerifier, open_note

VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "signed_note"
DATA = json.loads((VECTORS / "strict_open.json").read_text(encoding="utf-8"))
LOG_KEYS = [NoteVerifier.from_verifier_key(k) for k in DATA["log_keys"]]
WITNESS_KEYS = [CosignatureVerifier.from_verifier_key(k) for k in DATA["witness_keys"]]
CASES = {c["name"]: c for c in DATA["cases"]}
WHY = {"bad": "invalid signature", "twice": "two signature lines"}


def test_the_generator_reproduces_the_file() -> None:
    done = subprocess.run(
        [sys.executable, str(VECTORS / "gen_strict_open.py"), "--check"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_kind_of_case_is_there() -> None:
    assert {"valid_then_bad", "bad_then_valid", "two_valid_lines_of_one_key",
            "cosignature_bad_beside_good"} <= set(CASES)  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_open_note(name: str) -> None:
    case: dict[str, Any] = CASES[name]
    message = case["note"].encode("utf-8")
    if case["log"]["ok"]:
        assert list(open_note(message, LOG_KEYS).key_names) == case["log"]["verified"]
    else:
        with pytest.raises(InvalidNoteSignature, match=WHY[case["log"]["why"]]):
            open_note(message, LOG_KEYS)


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if c["witnesses"]))
def test_cosignatures(name: str) -> None:
    case: dict[str, Any] = CASES[name]
    message = case["note"].encode("utf-8")
    if case["witnesses"]["ok"]:
        found = verify_cosignatures(message, WITNESS_KEYS)
        assert {v.witness.name: v.timestamp for v in found} == case["witnesses"]["times"]
    else:
        with pytest.raises(IntegrityError, match="does not verify"):
            verify_cosignatures(message, WITNESS_KEYS)
