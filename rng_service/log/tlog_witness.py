"""The wire format of C2SP tlog-witness ``add-checkpoint``: shared by the witness and the log.

Owns the request body (an ``old <size>`` line, at most :data:`MAX_PROOF_LINES` base64
consistency proof lines, an empty line, the checkpoint: :class:`AddCheckpoint`,
:func:`parse_add_checkpoint`), the 409 answer's size body (:data:`SIZE_CONTENT_TYPE`,
:func:`encode_size`, :func:`parse_size`) and the 200 answer's signature lines
(:func:`parse_signature_lines`), as C2SP tlog-witness, "add-checkpoint", words them. Pure:
bytes in, values out; a body that does not follow it is :class:`MalformedWitnessMessage`
(bad input: the witness answers 400). The HTTP exchange is the witness server's and the
log's publisher's.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rng_service.errors import InvalidArgument
from rng_service.log.merkle import HASH_SIZE
from rng_service.log.note import MalformedNote, NoteSignature, parse_note

__all__ = [
    "ADD_CHECKPOINT_PATH",
    "MAX_BODY_BYTES",
    "MAX_PROOF_LINES",
    "SIZE_CONTENT_TYPE",
    "AddCheckpoint",
    "MalformedWitnessMessage",
    "encode_size",
    "parse_add_checkpoint",
    "parse_signature_lines",
    "parse_size",
]

ADD_CHECKPOINT_PATH = "/add-checkpoint"
SIZE_CONTENT_TYPE = "text/x.tlog.size"
MAX_PROOF_LINES = 63
#: Largest request body a witness reads: 63 proof lines, a checkpoint with its extension lines
#: and up to 100 signature lines fit in well under this.
MAX_BODY_BYTES = 64 * 1024

_DECIMAL = re.compile(r"0|[1-9][0-9]*")
_MAX_SIZE = 2**64 - 1


class MalformedWitnessMessage(InvalidArgument):
    """An add-checkpoint request or answer that does not follow C2SP tlog-witness."""

    def __init__(self, message: str) -> None:
        super().__init__("body", message, allowed="C2SP tlog-witness add-checkpoint format")


@dataclass(frozen=True, slots=True)
class AddCheckpoint:
    """An add-checkpoint request: the old size, the consistency proof from it, the signed
    checkpoint note (which may carry several signatures)."""

    old_size: int
    proof: tuple[bytes, ...]
    note: bytes

    def encode(self) -> bytes:
        if not 0 <= self.old_size <= _MAX_SIZE:
            raise MalformedWitnessMessage(f"old size {self.old_size} is out of range")
        if len(self.proof) > MAX_PROOF_LINES:
            raise MalformedWitnessMessage(
                f"{len(self.proof)} consistency proof lines; at most {MAX_PROOF_LINES}"
            )
        lines = [f"old {self.old_size}\n"]
        lines += [base64.b64encode(h).decode("ascii") + "\n" for h in self.proof]
        return "".join(lines).encode("ascii") + b"\n" + self.note


def _decimal(text: str, what: str) -> int:
    if not _DECIMAL.fullmatch(text):
        raise MalformedWitnessMessage(f"{what} {text!r} is not a decimal without leading zeroes")
    value = int(text)
    if value > _MAX_SIZE:
        raise MalformedWitnessMessage(f"{what} {text} exceeds 2^64 - 1")
    return value


def parse_add_checkpoint(body: bytes) -> AddCheckpoint:
    """Parses an add-checkpoint request body (the note's signatures are not checked here)."""
    if len(body) > MAX_BODY_BYTES:
        raise MalformedWitnessMessage(f"body of {len(body)} bytes; at most {MAX_BODY_BYTES}")
    head, sep, note = body.partition(b"\n\n")
    if not sep:
        raise MalformedWitnessMessage("no empty line between the old size and the checkpoint")
    try:
        lines = head.decode("ascii").split("\n")
    except UnicodeDecodeError as e:
        raise MalformedWitnessMessage("the old size and proof lines are not ASCII") from e
    first = lines[0]
    if not first.startswith("old "):
        raise MalformedWitnessMessage(f"first line {first[:40]!r} is not 'old <size>'")
    old_size = _decimal(first[4:], "old size")
    proof_lines = lines[1:]
    if len(proof_lines) > MAX_PROOF_LINES:
        raise MalformedWitnessMessage(
            f"{len(proof_lines)} consistency proof lines; at most {MAX_PROOF_LINES}"
        )
    proof: list[bytes] = []
    for number, line in enumerate(proof_lines, 1):
        try:
            value = base64.b64decode(line.encode("ascii"), validate=True)
        except binascii.Error as e:
            raise MalformedWitnessMessage(f"proof line {number} is not base64") from e
        if len(value) != HASH_SIZE or base64.b64encode(value).decode("ascii") != line:
            raise MalformedWitnessMessage(f"proof line {number} is not a base64 32-byte hash")
        proof.append(value)
    try:
        parse_note(note)
    except MalformedNote as e:
        raise MalformedWitnessMessage(f"the checkpoint is not a signed note: {e}") from e
    return AddCheckpoint(old_size=old_size, proof=tuple(proof), note=note)


def encode_size(size: int) -> bytes:
    """The body of a 409 answer: the size in decimal and a newline."""
    return f"{size}\n".encode("ascii")


def parse_size(body: bytes) -> int:
    """The tree size in a 409 answer's ``text/x.tlog.size`` body."""
    try:
        text = body.decode("ascii")
    except UnicodeDecodeError as e:
        raise MalformedWitnessMessage("the size body is not ASCII") from e
    if not text.endswith("\n"):
        raise MalformedWitnessMessage("the size body does not end with a newline")
    return _decimal(text[:-1], "size")


def parse_signature_lines(body: bytes) -> Sequence[NoteSignature]:
    """The note signature lines of a 200 answer (at least one; each ending in a newline)."""
    if not body or not body.endswith(b"\n"):
        raise MalformedWitnessMessage("no signature lines, or they do not end with a newline")
    try:
        # A note with a placeholder text: the same line syntax as any signed note's.
        return parse_note(b"x\n\n" + body).signatures
    except MalformedNote as e:
        raise MalformedWitnessMessage(f"the answer is not note signature lines: {e}") from e
