"""Witness cosignatures of checkpoints: C2SP tlog-cosignature ``cosignature/v1`` with Ed25519.

Owns the cosignature format the witness writes, the service keeps beside its checkpoints and
the verifiers check (docs/log-format.md, "Witness cosignatures"): a signed-note line whose
key ID has type 0x04 (:class:`CosignatureVerifier`, an
:class:`~rng_service.log.note.Ed25519NoteKey`), holding an 8-byte timestamp (at most 2^63 - 1)
and an Ed25519 signature over ``cosignature/v1\\ntime <t>\\n`` and the checkpoint's note body
(:func:`signed_message`). Lines of unknown keys are ignored; a known key's line that does not
verify is :class:`InvalidCosignature`. The type byte keeps a witness key from matching a log
key (0x01) of the same name. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from rng_service.errors import IntegrityError, InvalidArgument
from rng_service.log.note import (
    Ed25519KeySigner,
    Ed25519NoteKey,
    MalformedNote,
    NoteSignature,
    SignedNote,
    key_id,
    key_map,
    parse_note,
)

__all__ = [
    "ALG_COSIGNATURE_V1",
    "COSIGNATURE_HEADER",
    "MAX_TIMESTAMP",
    "Cosignature",
    "CosignatureSigner",
    "CosignatureVerifier",
    "InvalidCosignature",
    "VerifiedCosignature",
    "attach_cosignatures",
    "cosigner_key_id",
    "parse_cosignature",
    "signed_message",
    "verify_cosignatures",
]

ALG_COSIGNATURE_V1 = 0x04
"""Signature type byte of Ed25519 ``cosignature/v1`` in key IDs and vkeys (tlog-cosignature)."""
COSIGNATURE_HEADER = "cosignature/v1"
"""First line of the signed message: domain separation from log signatures."""
MAX_TIMESTAMP = 2**63 - 1
"""A cosignature's timestamp "MUST NOT exceed 2^63 - 1"."""
_SIGNATURE_SIZE = 64
_LINE_SIZE = 4 + 8 + _SIGNATURE_SIZE


class InvalidCosignature(IntegrityError):
    """A cosignature line from a known witness key is malformed or does not verify."""


def cosigner_key_id(name: str, public_key: bytes) -> int:
    """SHA-256(name || 0x0A || 0x04 || 32-byte public key)[:4] as a big-endian uint32."""
    return key_id(name, public_key, alg=ALG_COSIGNATURE_V1)


def signed_message(body: bytes, timestamp: int) -> bytes:
    """``cosignature/v1\\ntime <timestamp>\\n`` followed by the checkpoint's note body."""
    if not 0 <= timestamp <= MAX_TIMESTAMP:
        raise InvalidArgument("timestamp", f"{timestamp} is out of range", allowed="0 to 2^63-1")
    if not body.endswith(b"\n"):
        raise MalformedNote("a cosigned note body must end with a newline")
    return f"{COSIGNATURE_HEADER}\ntime {timestamp}\n".encode("ascii") + body


@dataclass(frozen=True, slots=True)
class Cosignature:
    """One parsed cosignature line: the cosigner's key name and ID, its timestamp (POSIX
    seconds) and the 64-byte Ed25519 signature."""

    name: str
    key_id: int
    timestamp: int
    signature: bytes

    def line(self) -> str:
        """The signature line, ending in a newline."""
        raw = self.key_id.to_bytes(4, "big") + self.timestamp.to_bytes(8, "big") + self.signature
        return NoteSignature(self.name, self.key_id, raw[4:]).line()


def parse_cosignature(signature: NoteSignature) -> Cosignature:
    """Splits a note signature into the ``timestamped_signature`` of an Ed25519 cosignature.

    Raises :class:`InvalidCosignature` if it is not 8 + 64 bytes or its timestamp exceeds
    2^63 - 1 (the caller knows the key: a known key's malformed line rejects it).
    """
    raw = signature.signature
    if len(raw) != _LINE_SIZE - 4:
        raise InvalidCosignature(
            f"cosignature of {signature.name}+{signature.key_id:08x} is {len(raw) + 4} bytes, "
            f"expected {_LINE_SIZE} (key ID, 8-byte timestamp, 64-byte Ed25519 signature)"
        )
    timestamp = int.from_bytes(raw[:8], "big")
    if timestamp > MAX_TIMESTAMP:
        raise InvalidCosignature(
            f"cosignature of {signature.name}+{signature.key_id:08x} has timestamp {timestamp}, "
            f"beyond 2^63 - 1"
        )
    return Cosignature(signature.name, signature.key_id, timestamp, raw[8:])


class CosignatureVerifier(Ed25519NoteKey):
    """A witness's Ed25519 ``cosignature/v1`` key: name, key ID (type 0x04), public key."""

    ALG = ALG_COSIGNATURE_V1
    _KEY_WHAT = "witness verifier key"
    _NAME_WHAT = "witness key name"
    _WRONG_ALG = (
        "(a witness key is 0x04, Ed25519 cosignature/v1; a log's key, 0x01, "
        "cannot verify cosignatures)"
    )
    _STRIP = True

    __slots__ = ()

    def matches(self, signature: NoteSignature) -> bool:
        return signature.name == self._name and signature.key_id == self._key_id

    def verify(self, body: bytes, cosignature: Cosignature) -> bool:
        return self._verifies(cosignature.signature, signed_message(body, cosignature.timestamp))


class CosignatureSigner(Ed25519KeySigner[CosignatureVerifier]):
    """A witness's signing key: cosigns checkpoint bodies. Never shows the private key."""

    __slots__ = ()

    def _public_half(self, name: str, public_key: Ed25519PublicKey) -> CosignatureVerifier:
        return CosignatureVerifier(name, public_key)

    def cosign(self, body: bytes, timestamp: int) -> Cosignature:
        """The cosignature of checkpoint ``body`` at ``timestamp`` (POSIX seconds)."""
        signature = self._key.sign(signed_message(body, timestamp))
        return Cosignature(self.name, self.key_id, timestamp, signature)


@dataclass(frozen=True, slots=True)
class VerifiedCosignature:
    """A cosignature that verified with a configured witness key."""

    witness: CosignatureVerifier
    timestamp: int
    line: str


def verify_cosignatures(
    note: bytes | SignedNote, witnesses: Sequence[CosignatureVerifier]
) -> list[VerifiedCosignature]:
    """The cosignatures of configured ``witnesses`` on ``note`` (a signed checkpoint), newest
    first per witness: one per witness key, the newest when a note carries several.

    Lines of unknown keys are ignored. A line of a known key that is malformed, does not verify
    over the note's text, or carries a timestamp beyond 2^63 - 1 raises
    :class:`InvalidCosignature`; a note that is not a signed note raises ``MalformedNote``.
    """
    parsed = parse_note(note) if isinstance(note, bytes) else note
    body = parsed.text.encode("utf-8")
    known = key_map(witnesses, field="witnesses", what="witness key")
    best: dict[tuple[str, int], VerifiedCosignature] = {}
    for sig in parsed.signatures:
        witness = known.get((sig.name, sig.key_id))
        if witness is None:
            continue
        cosig = parse_cosignature(sig)
        if not witness.verify(body, cosig):
            raise InvalidCosignature(
                f"cosignature of witness {witness.name}+{witness.key_id:08x} (time "
                f"{cosig.timestamp}) does not verify: the checkpoint or the cosignature was "
                f"altered, or it is of another checkpoint"
            )
        found = VerifiedCosignature(witness, cosig.timestamp, sig.line())
        key = (witness.name, witness.key_id)
        if key not in best or best[key].timestamp < found.timestamp:
            best[key] = found
    return sorted(best.values(), key=lambda v: (-v.timestamp, v.witness.name))


def attach_cosignatures(note: bytes, lines: Iterable[str]) -> bytes:
    """``note`` with the signature ``lines`` appended (each ``— name base64\\n``), leaving out
    lines it already carries. The note's text and its own signatures are unchanged."""
    parsed = parse_note(note)
    have = {s.line() for s in parsed.signatures}
    extra: list[str] = []
    for line in lines:
        text = line if line.endswith("\n") else line + "\n"
        if text not in have:
            have.add(text)
            extra.append(text)
    if not extra:
        return note
    combined = note + "".join(extra).encode("utf-8")
    parse_note(combined)  # still a well-formed note (at most MAX_SIGNATURES lines)
    return combined
