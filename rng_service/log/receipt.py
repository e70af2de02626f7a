"""Receipts: their portable JSON form and their offline verification.

A receipt proves that one entry is in the log: the entry bytes, its RFC 6962 leaf hash
(section 2.1), an inclusion proof (RFC 9162 section 2.1.3.2) and the signed checkpoint of the
tree the proof is for (C2SP tlog-checkpoint in a C2SP signed note). :func:`verify_receipt`
needs only the receipt and the log's verifier keys: no service, no database.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from rng_service.errors import IntegrityError
from rng_service.log.entry import LogEntry
from rng_service.log.merkle import leaf_hash, verify_inclusion
from rng_service.log.note import Checkpoint, NoteVerifier, open_note

__all__ = [
    "Receipt",
    "ReceiptFormatError",
    "VerifiedReceipt",
    "receipt_from_json",
    "receipt_to_json",
    "verify_receipt",
]

RECEIPT_FORMAT = "rng-service-receipt/v1"


class ReceiptFormatError(IntegrityError):
    """The receipt file is not a well-formed receipt."""


@dataclass(frozen=True, slots=True)
class Receipt:
    """Everything needed to verify offline that ``entry`` is in the log (docs/log-format.md)."""

    index: int
    entry: bytes
    leaf_hash: bytes
    inclusion_proof: tuple[bytes, ...]
    tree_size: int
    checkpoint: str
    replayed: bool


@dataclass(frozen=True, slots=True)
class VerifiedReceipt:
    entry: LogEntry
    checkpoint: Checkpoint
    key_names: tuple[str, ...]


def receipt_to_json(receipt: Receipt) -> str:
    return json.dumps(
        {
            "format": RECEIPT_FORMAT,
            "index": receipt.index,
            "entry": base64.b64encode(receipt.entry).decode("ascii"),
            "leaf_hash": receipt.leaf_hash.hex(),
            "inclusion_proof": [h.hex() for h in receipt.inclusion_proof],
            "tree_size": receipt.tree_size,
            "checkpoint": receipt.checkpoint,
        },
        indent=2,
    )


def receipt_from_json(text: str) -> Receipt:
    try:
        data: Any = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != RECEIPT_FORMAT:
            raise ReceiptFormatError(f'not a receipt (expected "format": "{RECEIPT_FORMAT}")')
        index, size = data["index"], data["tree_size"]
        if not (isinstance(index, int) and isinstance(size, int)):
            raise ReceiptFormatError("index and tree_size must be integers")
        checkpoint = data["checkpoint"]
        if not isinstance(checkpoint, str):
            raise ReceiptFormatError("checkpoint must be a string")
        return Receipt(
            index=index,
            entry=base64.b64decode(data["entry"], validate=True),
            leaf_hash=bytes.fromhex(data["leaf_hash"]),
            inclusion_proof=tuple(bytes.fromhex(h) for h in data["inclusion_proof"]),
            tree_size=size,
            checkpoint=checkpoint,
            replayed=False,
        )
    except ReceiptFormatError:
        raise
    except json.JSONDecodeError as e:
        raise ReceiptFormatError(f"receipt is not JSON: {e}") from e
    except (KeyError, TypeError, ValueError, binascii.Error) as e:
        raise ReceiptFormatError(f"malformed receipt: {type(e).__name__}: {e}") from e


def verify_receipt(receipt: Receipt, verifiers: list[NoteVerifier]) -> VerifiedReceipt:
    """Checks signature, checkpoint, leaf hash and inclusion; raises IntegrityError subclasses."""
    body, names = open_note(receipt.checkpoint.encode("utf-8"), verifiers)
    checkpoint = Checkpoint.parse(body)
    if checkpoint.size != receipt.tree_size:
        raise IntegrityError(
            f"receipt tree_size {receipt.tree_size} differs from its checkpoint's size "
            f"{checkpoint.size}"
        )
    if leaf_hash(receipt.entry) != receipt.leaf_hash:
        raise IntegrityError("leaf_hash is not SHA-256(0x00 || entry)")
    entry = LogEntry.decode(receipt.entry)
    if entry.index != receipt.index:
        raise IntegrityError(f"entry says index {entry.index}, receipt says {receipt.index}")
    verify_inclusion(
        receipt.leaf_hash,
        receipt.index,
        checkpoint.size,
        list(receipt.inclusion_proof),
        checkpoint.root_hash,
    )
    return VerifiedReceipt(entry=entry, checkpoint=checkpoint, key_names=tuple(names))
