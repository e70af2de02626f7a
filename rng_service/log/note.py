"""Signed notes (C2SP signed-note) with Ed25519 keys, and log checkpoints (C2SP tlog-checkpoint).

Owns the text formats the log publishes its tree heads in (docs/log-format.md, "Checkpoints
and signed notes"), compatible with golang.org/x/mod/sumdb/note: signature lines ``— <key
name> <base64(key ID || signature)>``, the key ID and verifier-key string of C2SP signed-note
("Signatures", "Ed25519 signatures") with :class:`Ed25519NoteKey`, the one key class of log
notes and witness cosignatures, and the checkpoint body (origin, size, base64 root,
extensions). Opening a note is stricter than Go's ``note.Open``: every line of a known key
verifies, one key signs once, unknown keys are ignored, no verified line fails. Failures are
domain errors (:class:`MalformedNote`, :class:`InvalidNoteSignature`, :class:`UnverifiedNote`,
:class:`InvalidVerifierKey`), never a bare ``ValueError``. No I/O (key files:
:mod:`rng_service.log.keys`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Generic, NamedTuple, NoReturn, Protocol, Self, TypeVar

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from rng_service.errors import IntegrityError, InvalidArgument

__all__ = [
    "ALG_ED25519",
    "MAX_SIGNATURES",
    "Checkpoint",
    "Ed25519KeySigner",
    "Ed25519NoteKey",
    "Ed25519NoteSigner",
    "InvalidNoteSignature",
    "InvalidVerifierKey",
    "MalformedCheckpoint",
    "MalformedNote",
    "NoteSignature",
    "NoteSigner",
    "NoteVerifier",
    "OpenedNote",
    "SignedNote",
    "UnverifiedNote",
    "check_key_id",
    "is_valid_key_name",
    "key_id",
    "key_map",
    "open_checkpoint",
    "open_note",
    "parse_note",
    "sign_note",
    "split_verifier_key",
]

ALG_ED25519 = 0x01
"""Signature type byte of Ed25519 in key IDs and verifier keys (C2SP signed-note)."""
MAX_SIGNATURES = 100
"""Most signature lines a note may carry (the spec's floor is 16; Go's sumdb/note uses 100)."""

_EM_DASH_PREFIX = "\u2014 "
_HEX8 = re.compile(r"[0-9a-fA-F]{8}")
_TREE_SIZE = re.compile(r"0|[1-9][0-9]*")


class MalformedNote(IntegrityError):
    """The bytes are not a well-formed signed note."""


class MalformedCheckpoint(MalformedNote):
    """The note text is not a well-formed checkpoint."""


class InvalidNoteSignature(IntegrityError):
    """A signature from a known key does not verify: the whole note is rejected."""


class UnverifiedNote(IntegrityError):
    """No signature in the note comes from a known key."""


class InvalidVerifierKey(InvalidArgument):
    """A verifier-key (or signer-key) string is malformed or inconsistent."""

    def __init__(self, message: str) -> None:
        super().__init__("verifier_key", message, allowed="<name>+<8 hex key id>+<base64 key>")


def is_valid_key_name(name: str) -> bool:
    """Non-empty, no Unicode space, no '+' (C2SP signed-note, "Format")."""
    return bool(name) and "+" not in name and not any(ch.isspace() for ch in name)


def key_id(name: str, public_key: bytes, *, alg: int = ALG_ED25519) -> int:
    """SHA-256(key name || 0x0A || signature type || public key)[:4] as a big-endian uint32."""
    digest = hashlib.sha256(name.encode("utf-8") + b"\n" + bytes([alg]) + public_key).digest()
    return int.from_bytes(digest[:4], "big")


def _b64decode(text: str) -> bytes:
    """Strict standard base64 (RFC 4648 section 4) with padding; raises binascii.Error."""
    return base64.b64decode(text.encode("ascii"), validate=True)


def _raw_public(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


# -- keys ----------------------------------------------------------------------------------------


def split_verifier_key(vkey: str, *, alg: int, what: str, wrong_alg: str) -> tuple[str, str, bytes]:
    """``<name>+<8 hex key id>+<base64(alg || 32-byte Ed25519 key)>`` as (name, key ID text,
    key); :class:`InvalidVerifierKey` naming ``what`` if it is malformed or of another type
    (``wrong_alg`` says which are allowed). The caller checks the key ID (:func:`check_key_id`)."""
    name, _, rest = vkey.partition("+")
    id_hex, _, key64 = rest.partition("+")
    if not is_valid_key_name(name) or not _HEX8.fullmatch(id_hex) or not key64:
        raise InvalidVerifierKey(f"malformed {what} {vkey!r}")
    try:
        raw = _b64decode(key64)
    except (binascii.Error, UnicodeEncodeError) as e:
        raise InvalidVerifierKey(f"{what} {vkey!r}: key is not base64") from e
    if not raw or raw[0] != alg:
        raise InvalidVerifierKey(
            f"{what} {vkey!r}: unknown signature type {raw[0] if raw else None!r} {wrong_alg}"
        )
    if len(raw) != 33:
        raise InvalidVerifierKey(
            f"{what} {vkey!r}: Ed25519 key is {len(raw) - 1} bytes, expected 32"
        )
    return name, id_hex, raw[1:]


def check_key_id(computed: int, id_hex: str, vkey: str, *, what: str) -> None:
    if computed != int(id_hex, 16):
        raise InvalidVerifierKey(
            f"{what} {vkey!r}: key ID {id_hex} does not match the key (computed {computed:08x})"
        )


class NoteSigner(Protocol):
    """Something that signs note text under a key name and key ID."""

    @property
    def name(self) -> str: ...

    @property
    def key_id(self) -> int: ...

    def sign(self, message: bytes) -> bytes: ...


class Ed25519NoteKey:
    """An Ed25519 public key under a key name, with its C2SP key ID and verifier-key string
    ``<name>+<8 hex key id>+<base64(type || key)>`` for one signature type: the one key class
    of log signatures (:class:`NoteVerifier`, type 0x01, C2SP signed-note) and of witness
    cosignatures (:class:`~rng_service.log.cosignature.CosignatureVerifier`, type 0x04, C2SP
    tlog-cosignature). A subclass names its type and says what its signatures sign."""

    ALG: ClassVar[int] = ALG_ED25519
    """The signature type byte in the key ID and the verifier key."""
    _KEY_WHAT: ClassVar[str] = "verifier key"
    _NAME_WHAT: ClassVar[str] = "key name"
    _WRONG_ALG: ClassVar[str] = "(only 0x01 Ed25519 is supported)"
    _STRIP: ClassVar[bool] = False
    """Whether :meth:`from_verifier_key` strips white space around the string first."""

    __slots__ = ("_key_id", "_name", "_public", "_raw")

    def __init__(self, name: str, public_key: Ed25519PublicKey) -> None:
        if not is_valid_key_name(name):
            raise InvalidVerifierKey(f"{self._NAME_WHAT} {name!r} is empty or has a space or '+'")
        self._name = name
        self._public = public_key
        self._raw = _raw_public(public_key)
        self._key_id = key_id(name, self._raw, alg=self.ALG)

    @classmethod
    def from_verifier_key(cls, vkey: str) -> Self:
        """Parses ``<name>+<8 hex key id>+<base64(type || 32-byte public key)>``."""
        name, id_hex, raw = split_verifier_key(
            vkey.strip() if cls._STRIP else vkey, alg=cls.ALG, what=cls._KEY_WHAT,
            wrong_alg=cls._WRONG_ALG,
        )  # fmt: skip
        verifier = cls(name, Ed25519PublicKey.from_public_bytes(raw))
        check_key_id(verifier.key_id, id_hex, vkey, what=cls._KEY_WHAT)
        return verifier

    @property
    def name(self) -> str:
        return self._name

    @property
    def key_id(self) -> int:
        return self._key_id

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self._public

    def verifier_key(self) -> str:
        """The ``<name>+<key id>+<base64 key>`` string form."""
        encoded = base64.b64encode(bytes([self.ALG]) + self._raw).decode("ascii")
        return f"{self._name}+{self._key_id:08x}+{encoded}"

    def _verifies(self, signature: bytes, message: bytes) -> bool:
        try:
            self._public.verify(signature, message)
        except InvalidSignature:
            return False
        return True

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.verifier_key()!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._name == self._name and other._raw == self._raw

    def __hash__(self) -> int:
        return hash((self._name, self._raw))


class NoteVerifier(Ed25519NoteKey):
    """An Ed25519 note verifier: key name, key ID (type 0x01) and public key."""

    __slots__ = ()

    def verify(self, message: bytes, signature: bytes) -> bool:
        return self._verifies(signature, message)


_K = TypeVar("_K", bound=Ed25519NoteKey)


class Ed25519KeySigner(ABC, Generic[_K]):
    """The private half of an :class:`Ed25519NoteKey`: a log's note signer or a witness's
    cosigner. Never shows the private key: no repr of it, no pickling."""

    __slots__ = ("_key", "_verifier")

    def __init__(self, name: str, private_key: Ed25519PrivateKey) -> None:
        if not isinstance(private_key, Ed25519PrivateKey):
            raise InvalidArgument("private_key", "is not an Ed25519 private key")
        self._key = private_key
        self._verifier = self._public_half(name, private_key.public_key())

    @abstractmethod
    def _public_half(self, name: str, public_key: Ed25519PublicKey) -> _K:
        """The verifier of the key pair (its signature type)."""

    @property
    def name(self) -> str:
        return self._verifier.name

    @property
    def key_id(self) -> int:
        return self._verifier.key_id

    def verifier(self) -> _K:
        return self._verifier

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, key_id={self.key_id:08x})"

    def __reduce__(self) -> NoReturn:
        raise TypeError(f"{type(self).__name__} holds a private key and cannot be pickled")


class Ed25519NoteSigner(Ed25519KeySigner[NoteVerifier]):
    """Signs notes with an Ed25519 private key under ``name``. Never shows the private key."""

    __slots__ = ()

    def _public_half(self, name: str, public_key: Ed25519PublicKey) -> NoteVerifier:
        return NoteVerifier(name, public_key)

    @classmethod
    def from_signer_key(cls, skey: str) -> Ed25519NoteSigner:
        """Parses the sumdb/note signer-key form ``PRIVATE+KEY+<name>+<key id>+<base64 seed>``.

        Only for interoperability and test vectors: this service keeps keys in PEM files.
        """
        parts = skey.split("+", 4)
        if len(parts) != 5 or parts[0] != "PRIVATE" or parts[1] != "KEY":
            raise InvalidVerifierKey("malformed signer key")
        _, _, name, id_hex, key64 = parts
        if not is_valid_key_name(name) or not _HEX8.fullmatch(id_hex):
            raise InvalidVerifierKey("malformed signer key")
        try:
            raw = _b64decode(key64)
        except (binascii.Error, UnicodeEncodeError) as e:
            raise InvalidVerifierKey("malformed signer key: key is not base64") from e
        if len(raw) != 33 or raw[0] != ALG_ED25519:
            raise InvalidVerifierKey("malformed signer key: not a 32-byte Ed25519 seed")
        signer = cls(name, Ed25519PrivateKey.from_private_bytes(raw[1:]))
        if signer.key_id != int(id_hex, 16):
            raise InvalidVerifierKey("malformed signer key: key ID does not match the key")
        return signer

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self._verifier.public_key

    def verifier_key(self) -> str:
        return self._verifier.verifier_key()

    def sign(self, message: bytes) -> bytes:
        return self._key.sign(message)


# -- notes ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NoteSignature:
    """One signature line: key name, key ID and the signature bytes (without the key ID)."""

    name: str
    key_id: int
    signature: bytes

    def line(self) -> str:
        encoded = base64.b64encode(self.key_id.to_bytes(4, "big") + self.signature).decode("ascii")
        return f"{_EM_DASH_PREFIX}{self.name} {encoded}\n"


@dataclass(frozen=True, slots=True)
class SignedNote:
    """A parsed (not yet verified) note: its text and its signatures in order."""

    text: str
    signatures: tuple[NoteSignature, ...]

    def encode(self) -> bytes:
        return (self.text + "\n" + "".join(s.line() for s in self.signatures)).encode("utf-8")


class OpenedNote(NamedTuple):
    """A verified note: its text (what was signed) and the names of the keys that verified."""

    text: str
    key_names: tuple[str, ...]


def _check_text(text: str, what: str) -> None:
    for ch in text:
        if ch < " " and ch != "\n":
            raise MalformedNote(f"{what} contains control character {ch!r}")


def sign_note(text: bytes | str, signers: Sequence[NoteSigner]) -> bytes:
    """The signed note of ``text`` (which must end in a newline) with one line per signer."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise MalformedNote("note text is not valid UTF-8") from e
    if not text.endswith("\n"):
        raise MalformedNote("note text must end with a newline")
    _check_text(text, "note text")
    if not signers:
        raise InvalidArgument("signers", "at least one signer is needed")
    message = text.encode("utf-8")
    lines = []
    for signer in signers:
        if not is_valid_key_name(signer.name):
            raise InvalidArgument("signers", f"key name {signer.name!r} is not valid")
        lines.append(NoteSignature(signer.name, signer.key_id, signer.sign(message)).line())
    return message + b"\n" + "".join(lines).encode("utf-8")


def parse_note(message: bytes) -> SignedNote:
    """Splits a signed note into text and signature lines, checking only the syntax."""
    try:
        decoded = message.decode("utf-8")
    except UnicodeDecodeError as e:
        raise MalformedNote("note is not valid UTF-8") from e
    _check_text(decoded, "note")
    split = decoded.rfind("\n\n")
    if split < 0:
        raise MalformedNote("note has no blank line before its signatures")
    text, block = decoded[: split + 1], decoded[split + 2 :]
    if not block or not block.endswith("\n"):
        raise MalformedNote("note has no signature lines, or they do not end with a newline")
    lines = block[:-1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise MalformedNote(f"note has {len(lines)} signatures; at most {MAX_SIGNATURES}")
    signatures = []
    for number, line in enumerate(lines, 1):
        if not line.startswith(_EM_DASH_PREFIX):
            raise MalformedNote(f"signature line {number} does not start with an em dash")
        name, _, encoded = line[len(_EM_DASH_PREFIX) :].partition(" ")
        if not is_valid_key_name(name) or not encoded:
            raise MalformedNote(f"signature line {number} has no valid key name and signature")
        try:
            raw = _b64decode(encoded)
        except (binascii.Error, UnicodeEncodeError) as e:
            raise MalformedNote(f"signature line {number} is not base64") from e
        if len(raw) < 5:
            raise MalformedNote(f"signature line {number} is too short")
        signatures.append(NoteSignature(name, int.from_bytes(raw[:4], "big"), raw[4:]))
    return SignedNote(text=text, signatures=tuple(signatures))


def key_map(keys: Iterable[_K], *, field: str, what: str = "key") -> dict[tuple[str, int], _K]:
    """``keys`` by (name, key ID), the pair a signature line names; two different keys under
    one pair are ambiguous: :class:`InvalidArgument` naming ``field``."""
    known: dict[tuple[str, int], _K] = {}
    for k in keys:
        previous = known.setdefault((k.name, k.key_id), k)
        if previous != k:
            raise InvalidArgument(
                field, f"ambiguous {what} {k.name}+{k.key_id:08x}: two different keys"
            )
    return known


def open_note(message: bytes, verifiers: Iterable[NoteVerifier]) -> OpenedNote:
    """Parses and verifies a signed note against the known ``verifiers``.

    Unknown keys' signatures are ignored; any bad line of a known key, or a second line of one,
    raises :class:`InvalidNoteSignature`; no verified signature raises :class:`UnverifiedNote`.
    """
    known = key_map(verifiers, field="verifiers")
    note = parse_note(message)
    payload = note.text.encode("utf-8")
    verified: list[str] = []
    seen: set[tuple[str, int]] = set()
    unknown: list[str] = []
    for sig in note.signatures:
        key = (sig.name, sig.key_id)
        verifier = known.get(key)
        if verifier is None:
            unknown.append(f"{sig.name}+{sig.key_id:08x}")
            continue
        # Every line of a known key is verified, whatever the order (stricter than Go's
        # note.Open, which checks only the first line of a key): a bad one fails the note.
        if not verifier.verify(payload, sig.signature):
            raise InvalidNoteSignature(
                f"invalid signature for key {sig.name}+{sig.key_id:08x}: the note was altered "
                f"or not signed by this key"
            )
        if key in seen:
            raise InvalidNoteSignature(
                f"two signature lines of key {sig.name}+{sig.key_id:08x}: a log key signs a "
                f"note once, so a note carrying two of its lines is refused"
            )
        seen.add(key)
        verified.append(sig.name)
    if not verified:
        known_text = ", ".join(f"{n}+{i:08x}" for n, i in known) or "none"
        raise UnverifiedNote(
            f"note has no signature from a known key (signed by {', '.join(unknown)}; "
            f"known keys: {known_text})"
        )
    return OpenedNote(text=note.text, key_names=tuple(verified))


# -- checkpoints ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A log's tree head: origin, tree size, RFC 6962 root hash, optional extension lines."""

    origin: str
    size: int
    root_hash: bytes
    extensions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.origin or "\n" in self.origin:
            raise MalformedCheckpoint("checkpoint origin must be one non-empty line")
        _check_text(self.origin, "checkpoint origin")
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 0:
            raise MalformedCheckpoint(f"checkpoint tree size {self.size!r} is not an integer >= 0")
        if len(self.root_hash) != 32:
            raise MalformedCheckpoint(
                f"checkpoint root hash is {len(self.root_hash)} bytes, expected 32"
            )
        for ext in self.extensions:
            if not ext or "\n" in ext:
                raise MalformedCheckpoint("checkpoint extension lines must be non-empty lines")
            _check_text(ext, "checkpoint extension line")

    def body(self) -> bytes:
        """The note text (C2SP tlog-checkpoint): origin, size, base64 root, extensions."""
        lines = [
            self.origin,
            str(self.size),
            base64.b64encode(self.root_hash).decode("ascii"),
            *self.extensions,
        ]
        return ("\n".join(lines) + "\n").encode("utf-8")

    @classmethod
    def parse(cls, text: bytes | str) -> Checkpoint:
        """Parses a checkpoint note text (not the signatures: see :func:`open_checkpoint`)."""
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError as e:
                raise MalformedCheckpoint("checkpoint is not valid UTF-8") from e
        if not text.endswith("\n"):
            raise MalformedCheckpoint("checkpoint text must end with a newline")
        lines = text[:-1].split("\n")
        if len(lines) < 3:
            raise MalformedCheckpoint(
                f"checkpoint has {len(lines)} lines; origin, size and root hash are required"
            )
        origin, size_text, root_text, *extensions = lines
        if not _TREE_SIZE.fullmatch(size_text):
            raise MalformedCheckpoint(
                f"checkpoint tree size {size_text!r} is not a decimal without leading zeros"
            )
        if int(size_text) >= 1 << 64:
            raise MalformedCheckpoint(f"checkpoint tree size {size_text} exceeds 2**64 - 1")
        try:
            root = _b64decode(root_text)
        except (binascii.Error, UnicodeEncodeError) as e:
            raise MalformedCheckpoint(f"checkpoint root hash {root_text!r} is not base64") from e
        if base64.b64encode(root).decode("ascii") != root_text:
            raise MalformedCheckpoint(f"checkpoint root hash {root_text!r} is not canonical")
        return cls(origin=origin, size=int(size_text), root_hash=root, extensions=tuple(extensions))


def open_checkpoint(
    message: bytes, verifiers: Iterable[NoteVerifier], *, origin: str | None = None
) -> tuple[Checkpoint, OpenedNote]:
    """Verifies a signed checkpoint note and parses it; checks the origin if given."""
    opened = open_note(message, verifiers)
    checkpoint = Checkpoint.parse(opened.text)
    if origin is not None and checkpoint.origin != origin:
        raise MalformedCheckpoint(
            f"checkpoint is for origin {checkpoint.origin!r}, expected {origin!r}"
        )
    return checkpoint, opened
