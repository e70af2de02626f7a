"""The browser's receipt verifier (web/verify) with receipts of entry formats 1, 2 and 3.

A log of five entries (format 1, then 2, then 3, as an upgraded log holds them) is built here
with a test key and signed; each entry's receipt must verify in headless Chromium. The leaf
step holds each format to its field set and format 3's ``table_map`` to its form (64 lowercase
hex characters, docs/log-format.md "Entries"): an entry altered there, with a receipt whose
leaf hash matches the altered bytes, stops at the leaf step, and the Python verifier refuses
it too. The map roots come from rng_service.log.table_map (the page only checks their form).
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rng_service.log.entry import GeneratorRef, LogEntry
from rng_service.log.merkle import inclusion_proof, leaf_hash, root_from_leaf_hashes
from rng_service.log.note import Checkpoint, Ed25519NoteSigner, sign_note
from rng_service.log.receipt import Receipt, receipt_to_json
from rng_service.log.table_map import TableMap
from tests.integration.test_verify_page import (
    PAGE,
    STEPS,
    _fill,
    _open,
    _python_verdict,
    _verify,
    browser,
)

ORIGIN = "formats.example/log"
KEY = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"verify page formats test").digest())
SIGNER = Ed25519NoteSigner(ORIGIN, KEY)
VKEY = SIGNER.verifier().verifier_key()

__all__ = ["browser"]  # the shared Chromium fixture, imported for this module's tests


def _entries() -> list[LogEntry]:
    base: dict[str, Any] = dict(
        timestamp_ns=1_767_225_600_000_000_000, kind="roulette_spin",
        params={"wheel": "double_zero"}, client="default", round_id="R1", session_id="",
        generator=GeneratorRef(instance="ab12", epoch=0, lab_mode=True),
    )  # fmt: skip
    spin = {"final": {"colour": "red", "number": "3", "position": 14, "voided": False},
            "spins": [{"colour": "red", "number": "3", "position": 14, "voided": False}],
            "wheel": "double_zero"}  # fmt: skip
    # (table, format, table_seq, table_prev) for indexes 0..4
    plan = [("T1", 1, None, None), ("T1", 2, 1, None), ("T2", 2, 1, None), ("T1", 3, 2, 1),
            ("T2", 3, 2, 2)]  # fmt: skip
    heads = TableMap()
    out = []
    for index, (table, version, seq, prev) in enumerate(plan):
        root = None
        if version >= 2:
            heads.set("default", table, index, seq)  # type: ignore[arg-type]
            root = heads.root() if version == 3 else None
        out.append(LogEntry(
            index=index, table_id=table, request_id=f"r{index}", outcome=spin,
            slot=None if version == 1 else "spin", table_seq=seq, table_prev=prev,
            table_map=root, version=version,
            **{**base, "round_id": f"R{index}"},
        ))  # fmt: skip
    return out


def _receipts() -> dict[int, str]:
    data = [e.encode() for e in _entries()]
    leaves = [leaf_hash(d) for d in data]
    checkpoint = Checkpoint(ORIGIN, len(leaves), root_from_leaf_hashes(leaves))
    signed = sign_note(checkpoint.body(), [SIGNER]).decode()
    return {
        i: receipt_to_json(Receipt(index=i, entry=d, leaf_hash=leaves[i],
                                   inclusion_proof=tuple(inclusion_proof(leaves, i)),
                                   tree_size=len(leaves), checkpoint=signed, replayed=False))
        for i, d in enumerate(data)
    }  # fmt: skip


RECEIPTS = _receipts()


def _check(driver: Any, receipt: str) -> dict[str, Any]:
    _fill(driver, receipt=receipt, log_keys=VKEY, origin="", witness_keys="", min_witnesses="",
          consistency="")  # fmt: skip
    return _verify(driver)


def _altered(index: int, old: bytes, new: bytes) -> str:
    """The receipt of entry ``index`` with its bytes altered and a leaf hash that matches them
    (so that only the leaf step's form check stands between them and the inclusion step)."""
    receipt = json.loads(RECEIPTS[index])
    entry = base64.b64decode(receipt["entry"])
    assert entry.count(old) == 1, (old, entry)
    entry = entry.replace(old, new)
    receipt["entry"] = base64.b64encode(entry).decode()
    receipt["leaf_hash"] = leaf_hash(entry).hex()
    return json.dumps(receipt, indent=2)


@pytest.mark.parametrize(("index", "version"), [(0, 1), (1, 2), (2, 2), (3, 3), (4, 3)])
def test_receipts_of_every_format_verify(browser: Any, index: int, version: int) -> None:
    entry = json.loads(base64.b64decode(json.loads(RECEIPTS[index])["entry"]))
    assert entry["v"] == version
    _open(browser, PAGE.as_uri())
    state = _check(browser, RECEIPTS[index])
    assert state["ok"] == "true", state
    assert [state["steps"][s][0] for s in STEPS[:5]] == ["pass"] * 5, state
    if version == 3:
        assert f"Table map root\n{entry['table_map']}" in state["outcome"]
    assert _python_verdict(RECEIPTS[index], VKEY) == f"verified {ORIGIN}"


def _v3_root() -> bytes:
    entry = json.loads(base64.b64decode(json.loads(RECEIPTS[3])["entry"]))
    return str(entry["table_map"]).encode()


ROOT_HEX = _v3_root()
ALTERATIONS = [
    ("uppercase", 3, ROOT_HEX, ROOT_HEX.upper(), "table_map"),
    ("63 characters", 3, ROOT_HEX, ROOT_HEX[:-1], "table_map"),
    ("65 characters", 3, ROOT_HEX, ROOT_HEX + b"0", "table_map"),
    ("not hex", 3, ROOT_HEX, ROOT_HEX[:-1] + b"g", "table_map"),
    ("null", 3, b'"' + ROOT_HEX + b'"', b"null", "table_map"),
    ("a number", 3, b'"' + ROOT_HEX + b'"', b"1", "table_map"),
    ("missing in format 3", 3, b'"table_map":"' + ROOT_HEX + b'",', b"", "entry format 3"),
    ("in a format 2 entry", 3, b'"v":3', b'"v":2', "entry format 2"),
    ("format 2 with a table_map", 1, b'"table_id":"T1",',
     b'"table_id":"T1","table_map":"' + ROOT_HEX + b'",', "entry format 2"),
    ("version as text", 3, b'"v":3', b'"v":"3"', "unknown format version"),
    ("format 4", 3, b'"v":3', b'"v":4', "unknown format version"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("index", "old", "new", "words"), [a[1:] for a in ALTERATIONS], ids=[a[0] for a in ALTERATIONS]
)
def test_the_leaf_step_holds_each_format_to_its_form(
    browser: Any, index: int, old: bytes, new: bytes, words: str
) -> None:
    receipt = _altered(index, old, new)
    _open(browser, PAGE.as_uri())
    state = _check(browser, receipt)
    assert state["ok"] == "false"
    assert state["failed"] == "leaf", state
    assert words in state["steps"]["leaf"][1], state["steps"]["leaf"]
    assert state["outcome"] is None
    assert _python_verdict(receipt, VKEY).startswith("refused")
