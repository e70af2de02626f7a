"""Consistency files (``rng-audit-consistency/v1``): two signed checkpoints of one log and the
RFC 6962 consistency proof between them, for verifiers that cannot ask the log themselves.

``rng-audit consistency`` writes one (the earlier checkpoint: a receipt's or one an auditor kept;
the later: the log's latest, or with ``--witnessed`` the newest that witnesses cosigned, with
their cosignatures); the verify page (web/verify) and :func:`check_consistency` read it. The
format (docs/log-format.md, "Consistency files") is a JSON object:

``{"format": "rng-audit-consistency/v1", "origin": <the checkpoints' origin line>,
"old": <signed note>, "new": <signed note>, "proof": [<64 hex digits>, ...]}``

with ``proof`` = PROOF(m, D[n]) of RFC 6962 section 2.1.2 from the old tree size m to the new
size n (empty when they are equal), checked by the algorithm of RFC 9162 section 2.1.4.2. The
sizes and roots come only from the signed checkpoints; ``origin`` is informative (the
verifier's own expected origin is what counts). Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rng_service.audit.verify import PinnedOrigin, VerificationFailure, VerifiedHead, open_head
from rng_service.errors import InvalidArgument
from rng_service.log.merkle import ProofError, verify_consistency
from rng_service.log.note import Checkpoint, NoteVerifier, parse_note

__all__ = [
    "CONSISTENCY_FORMAT",
    "ConsistencyFile",
    "check_consistency",
    "check_extends",
    "consistency_to_json",
    "read_consistency",
]

CONSISTENCY_FORMAT = "rng-audit-consistency/v1"


@dataclass(frozen=True, slots=True)
class ConsistencyFile:
    old: str
    new: str
    proof: tuple[bytes, ...]


def consistency_to_json(old: str, new: str, proof: Sequence[bytes]) -> str:
    """The file's text (indented JSON ending in a newline)."""
    origin = Checkpoint.parse(parse_note(new.encode("utf-8")).text).origin
    return (
        json.dumps(
            {
                "format": CONSISTENCY_FORMAT,
                "origin": origin,
                "old": old,
                "new": new,
                "proof": [h.hex() for h in proof],
            },
            indent=2,
            ensure_ascii=False,
        )
        + "\n"
    )


def read_consistency(text: str) -> ConsistencyFile:
    """Parses a consistency file; :class:`InvalidArgument` names the field at fault."""
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidArgument("consistency", f"not JSON: {e}") from e
    if not isinstance(data, dict) or data.get("format") != CONSISTENCY_FORMAT:
        raise InvalidArgument("format", f"is not {CONSISTENCY_FORMAT!r}")
    for field in ("old", "new"):
        if not isinstance(data.get(field), str):
            raise InvalidArgument(field, "missing or not a signed checkpoint (string)")
    proof = data.get("proof")
    if not isinstance(proof, list):
        raise InvalidArgument("proof", "missing or not a list of hex hashes")
    hashes = []
    for i, h in enumerate(proof):
        try:
            raw = bytes.fromhex(h) if isinstance(h, str) else b""
        except ValueError:
            raw = b""
        if len(raw) != 32:
            raise InvalidArgument(f"proof[{i}]", "is not a 32-byte hash in hex")
        hashes.append(raw)
    return ConsistencyFile(data["old"], data["new"], tuple(hashes))


def check_consistency(
    file: ConsistencyFile, verifiers: Sequence[NoteVerifier], origin: PinnedOrigin
) -> tuple[VerifiedHead, VerifiedHead]:
    """Both checkpoints signed by a given key and of the expected log, and the proof showing
    that the new one extends the old one; :class:`VerificationFailure` otherwise."""
    old = open_head(file.old, verifiers, source="the old checkpoint", origin=None)
    new = open_head(file.new, verifiers, source="the new checkpoint", origin=None)
    origin.check(old.checkpoint.origin, "the old checkpoint")
    origin.check(new.checkpoint.origin, "the new checkpoint")
    check_extends(old, new, file.proof)
    return old, new


def check_extends(old: VerifiedHead, new: VerifiedHead, proof: Sequence[bytes]) -> None:
    """``new`` extends ``old`` by ``proof`` (RFC 9162 section 2.1.4.2); else
    :class:`VerificationFailure` naming both (cut back, or a fork)."""
    a, b = old.checkpoint, new.checkpoint
    if a.size > b.size:
        raise VerificationFailure(
            f"{old.source} is for tree size {a.size}, beyond {new.source}'s size {b.size}: the "
            f"log was cut back (entries deleted), or this is another log"
        )
    try:
        verify_consistency(a.size, b.size, list(proof), a.root_hash, b.root_hash)
    except ProofError as e:
        raise VerificationFailure(
            f"fork: {old.source} (size {a.size}) is not consistent with {new.source} "
            f"(size {b.size}): {e}"
        ) from e
