"""Reading receipt files (``rng-service-receipt/v1``) with errors that name the field at fault.

The receipt file format is docs/log-format.md, "Receipts"; :func:`rng_service.log.receipt.
receipt_from_json` reads it for the service's own CLI. An auditor's tool must say precisely what
is wrong with a file it was handed, so :func:`read_receipt` checks every field first (JSON type,
hex or base64 encoding, 32-byte hashes for the RFC 6962 leaf hash and inclusion proof) and
raises :class:`ReceiptFieldError` naming it. Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from rng_service.errors import InvalidArgument
from rng_service.log.receipt import RECEIPT_FORMAT, Receipt

__all__ = ["ReceiptFieldError", "read_receipt"]


class ReceiptFieldError(InvalidArgument):
    """A receipt file is not JSON, or one of its fields is missing or malformed."""


def _hash(value: Any, field: str) -> bytes:
    if not isinstance(value, str):
        raise ReceiptFieldError(field, f"{value!r} is not a hex string")
    try:
        raw = bytes.fromhex(value)
    except ValueError as e:
        raise ReceiptFieldError(field, "is not hex") from e
    if len(raw) != 32:
        raise ReceiptFieldError(field, f"is {len(raw)} bytes, expected 32")
    return raw


def read_receipt(text: str) -> Receipt:
    """Parses a receipt file; raises :class:`ReceiptFieldError` naming the bad field."""
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as e:
        raise ReceiptFieldError("receipt", f"not JSON: {e}") from e
    if not isinstance(data, dict):
        raise ReceiptFieldError("receipt", "not a JSON object")
    if data.get("format") != RECEIPT_FORMAT:
        raise ReceiptFieldError("format", f"{data.get('format')!r} is not {RECEIPT_FORMAT!r}")
    for field in ("index", "tree_size"):
        value = data.get(field)
        if type(value) is not int or value < 0:
            raise ReceiptFieldError(field, f"{value!r} is not a non-negative integer")
    if not isinstance(data.get("entry"), str):
        raise ReceiptFieldError("entry", "missing or not a base64 string")
    try:
        entry = base64.b64decode(data["entry"], validate=True)
    except binascii.Error as e:
        raise ReceiptFieldError("entry", f"is not base64: {e}") from e
    proof = data.get("inclusion_proof")
    if not isinstance(proof, list):
        raise ReceiptFieldError("inclusion_proof", "missing or not a list of hex hashes")
    if not isinstance(data.get("checkpoint"), str):
        raise ReceiptFieldError("checkpoint", "missing or not a string (the signed note)")
    return Receipt(
        index=data["index"],
        entry=entry,
        leaf_hash=_hash(data.get("leaf_hash"), "leaf_hash"),
        inclusion_proof=tuple(_hash(h, f"inclusion_proof[{i}]") for i, h in enumerate(proof)),
        tree_size=data["tree_size"],
        checkpoint=data["checkpoint"],
        replayed=False,
    )
