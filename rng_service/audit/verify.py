"""Offline verification of a log export and of receipts against a log: the auditor's core.

Given only an export (:mod:`rng_service.audit.export`) and the log's verifier keys, recomputes
every leaf hash and the RFC 6962 Merkle tree (RFC 6962 section 2.1; RFC 9162 section 2.1) in one
streaming pass over the entries, with O(n) hashing and O(log n) memory: a right-edge stack of
complete subtrees, folded into a root only at the sizes that checkpoints name. It checks:

- every checkpoint (the export's and those the auditor kept) is a C2SP signed note signed by one
  of the given keys (C2SP signed-note), is a C2SP tlog-checkpoint of the export's origin, and
  has the root the entries give at its size; so all of them are prefixes of one tree, i.e.
  pairwise consistent in the sense of RFC 9162 section 2.1.4 (two checkpoints of one size with
  different roots, or of different sizes that are not prefixes of one tree, are a fork);
- every entry line's ``index`` is its position, its ``leaf_hash`` is SHA-256(0x00 || entry)
  and its bytes decode as a canonical entry (docs/log-format.md, "Entries") whose own index is
  its position;
- no entry lies beyond the newest checkpoint (it would be covered by no signature), and the
  export holds as many entries as its header declares;
- every (client, table) chain is unbroken (:class:`ChainTracker`), and the round rules hold
  across the whole log, from the entries' signed bytes (:class:`RoundTracker`): each slot of a
  round filled once, each request id once per client, a slot that agrees with its kind,
  nothing after a void, Mega Fire Blaze in the order of 58 Pa. Code 617b.7.

The canonical form of an entry is defined by the reference check here
(:func:`canonical_entry_index`: decode, check the fields of the format, re-encode, compare);
a reviewer reads this one. The export walk proves it faster with
:class:`rng_service.audit.fast_check.EntryChecker`, which answers as this check does (for the
first entry of each shape it calls this check; tests hold the two together).

It stops at the first problem with a :class:`VerificationFailure` (an integrity error) saying
what is wrong and at which index or line; a syntax error is an
:class:`~rng_service.audit.export.ExportFormatError` (bad input). It reads no database and calls
no service: the ``rng-audit`` command does the I/O.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from rng_service import canonical
from rng_service.audit.export import READ_FORMATS, ExportFormatError, ExportHeader, ExportReader
from rng_service.audit.fast_check import EntryChecker, EntryShape, json_bytes
from rng_service.audit.witnesses import WitnessReport, check_witnesses
from rng_service.errors import IntegrityError, InvalidArgument
from rng_service.log import rounds
from rng_service.log.cosignature import CosignatureVerifier
from rng_service.log.entry import EntryFormatError
from rng_service.log.merkle import (
    EMPTY_ROOT,
    LEAF_PREFIX,
    NODE_PREFIX,
    ProofError,
    node_hash,
    verify_consistency,
    verify_inclusion,
)
from rng_service.log.note import (
    Checkpoint,
    InvalidNoteSignature,
    MalformedNote,
    NoteVerifier,
    UnverifiedNote,
    open_note,
)
from rng_service.log.receipt import Receipt, VerifiedReceipt

__all__ = [
    "ExportReport",
    "PinnedOrigin",
    "VerificationFailure",
    "VerifiedHead",
    "canonical_entry",
    "canonical_entry_index",
    "canonical_entry_version",
    "check_receipt_against_export",
    "check_receipt_against_head",
    "open_head",
    "pinned_origin",
    "verify_export",
]


_V1_EXPORT = READ_FORMATS[0]


class VerificationFailure(IntegrityError):
    """The export, a checkpoint or a receipt does not verify. ``index``: the entry at fault."""

    def __init__(self, message: str, *, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index


@dataclass(frozen=True, slots=True)
class VerifiedHead:
    """A checkpoint whose signature verified: where it came from, its content, its signers."""

    source: str
    checkpoint: Checkpoint
    key_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PinnedOrigin:
    """The origin (checkpoint first line) a verifier expects, and where it came from."""

    origin: str
    source: str
    """``--origin``, or the name of the given keys."""

    def check(self, origin: str, what: str) -> None:
        """Raises :class:`VerificationFailure` unless ``what`` (of log ``origin``) is of this
        log."""
        if origin != self.origin:
            hint = (
                ""
                if self.source == "--origin"
                else "; if the log's key is not named by its origin, pass --origin"
            )
            raise VerificationFailure(
                f"{what} is of log {origin!r}, not of the expected log {self.origin!r} "
                f"({self.source}{hint})"
            )


def pinned_origin(verifiers: Sequence[NoteVerifier], origin: str | None = None) -> PinnedOrigin:
    """The origin a verifier must expect: ``origin`` if given (``--origin``), else the name of
    the keys when they all have one name. C2SP tlog-checkpoint says a log's key name should be
    its origin, so that name pins the log; keys of one log told apart by their key IDs share
    it. Keys of several names pin nothing: :class:`InvalidArgument` (the caller must say which
    log it expects), never a guess from the data under test.
    """
    if origin is not None:
        if not origin.strip() or "\n" in origin:
            raise InvalidArgument("origin", f"{origin!r} is not a checkpoint origin line")
        return PinnedOrigin(origin, "--origin")
    names = sorted({v.name for v in verifiers})
    if not names:
        raise InvalidArgument("key", "at least one verifier key is needed")
    if len(names) > 1:
        raise InvalidArgument(
            "origin",
            f"the keys have different names ({', '.join(names)}), so none of them stands for "
            f"the log's origin: pass --origin with the log's origin (the first line of its "
            f"checkpoints)",
        )
    return PinnedOrigin(names[0], f"the name of the key{'s' if len(verifiers) > 1 else ''}")


@dataclass(frozen=True, slots=True)
class ExportReport:
    """What a successful :func:`verify_export` established."""

    origin: str
    tree_size: int
    root_hash: bytes
    heads: tuple[VerifiedHead, ...]
    roots: dict[int, bytes] = field(default_factory=dict)
    """Recomputed roots at the sizes asked for (``want_sizes``) and at every checkpoint's size."""
    leaves: dict[int, bytes] = field(default_factory=dict)
    """Recomputed leaf hashes at the indices asked for (``want_indices``)."""
    kept: int = 0
    """How many of ``heads`` were kept by the auditor (``kept``): with none, a truncated copy
    of a longer log verifies (only a checkpoint from outside the export can show it)."""
    first_format_2: int | None = None
    """Index of the first format-2 entry (where the table chains start); None if there is
    none, or if the entries were not checked (``check_entries=False``)."""
    witnessed: WitnessReport | None = None
    """With ``witnesses``: their cosignatures on the export's and the kept checkpoints
    (:func:`rng_service.audit.witnesses.check_witnesses`)."""
    chains: int | None = None
    """How many (client, table) chains were followed, each unbroken from seq 1; None if the
    entries were not checked (``check_entries=False``)."""


def open_head(
    note: str | bytes, verifiers: Sequence[NoteVerifier], *, source: str, origin: str | None
) -> VerifiedHead:
    """Verifies one signed checkpoint. Raises :class:`VerificationFailure` if no given key
    signed it, a given key's signature is bad, or it is for another origin; a note that is not
    a well-formed signed checkpoint is bad input (:class:`InvalidArgument` naming ``source``).
    """
    message = note.encode("utf-8") if isinstance(note, str) else note
    try:
        opened = open_note(message, verifiers)
        checkpoint = Checkpoint.parse(opened.text)
    except (UnverifiedNote, InvalidNoteSignature) as e:
        raise VerificationFailure(f"{source}: {e}") from e
    except MalformedNote as e:
        raise InvalidArgument(source, f"not a signed checkpoint: {e}") from e
    if origin is not None and checkpoint.origin != origin:
        raise VerificationFailure(
            f"{source} is a checkpoint of log {checkpoint.origin!r}, not of {origin!r}"
        )
    return VerifiedHead(source=source, checkpoint=checkpoint, key_names=opened.key_names)


_ENTRY_FIELDS_V1: dict[str, type] = {
    "v": int, "index": int, "time": str, "kind": str, "params": dict, "outcome": dict,
    "client": str, "table_id": str, "round_id": str, "session_id": str, "request_id": str,
    "profile_sha256": str, "generator": dict,
}  # fmt: skip
#: Format 2 adds the slot and the (client, table) chain; table_prev is an int or null.
_ENTRY_FIELDS_V2: dict[str, type] = {
    **_ENTRY_FIELDS_V1, "slot": str, "table_seq": int, "table_prev": object,
}  # fmt: skip
_ENTRY_FIELDS = {1: _ENTRY_FIELDS_V1, 2: _ENTRY_FIELDS_V2}
_GENERATOR_FIELDS: dict[str, type] = {"instance": str, "epoch": int, "lab_mode": bool}
_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")


def _check_time(t: str) -> None:
    """RFC 3339 UTC with six fractional digits, a real date and time; else ValueError."""
    if _TIME.fullmatch(t) is None:
        raise ValueError(t)
    datetime.datetime(
        int(t[0:4]), int(t[5:7]), int(t[8:10]), int(t[11:13]), int(t[14:16]), int(t[17:19])
    )


def canonical_entry_index(data: bytes) -> int:
    """The ``index`` of canonical entry bytes (format version 1 or 2, docs/log-format.md).

    Accepts what :meth:`rng_service.log.entry.LogEntry.decode` accepts (a test holds the two
    together; only the time's fraction is checked more strictly here) at a third of its cost:
    RFC 8785 canonical JSON restricted to integers below
    2^53, no floats, ASCII object keys; the fields of the entry's version with their JSON types
    (format 2: a non-empty slot, table_seq from 1, table_prev null exactly when table_seq is 1
    and else an earlier index); the time as RFC 3339 UTC with six fractional digits. Raises
    :class:`EntryFormatError`.

    This is the reference check: it decodes and re-encodes the entry.
    :class:`rng_service.audit.fast_check.EntryChecker` gives the same answers several times
    faster on the entry shapes a log repeats (the export walk uses it).
    """
    index: int = canonical_entry(data)["index"]
    return index


def canonical_entry_version(data: bytes) -> int:
    """The format version (``v``) of canonical entry bytes, after the check of
    :func:`canonical_entry_index`; raises :class:`EntryFormatError`."""
    version: int = canonical_entry(data)["v"]
    return version


def canonical_entry(data: bytes) -> dict[str, Any]:
    """The reference check of :func:`canonical_entry_index`; returns the decoded entry (what
    :class:`~rng_service.audit.fast_check.EntryChecker` is given to fall back on)."""
    try:
        record = canonical.parse(data, ascii_keys=True)
    except canonical.CanonicalJsonError as e:
        raise EntryFormatError(f"entry is not restricted canonical JSON: {e}") from e
    if type(record) is not dict:
        raise EntryFormatError("entry is not a JSON object")
    version = record.get("v")
    if type(version) is not int or version not in _ENTRY_FIELDS:
        raise EntryFormatError(f"unknown entry format version {version!r} (known: 1, 2)")
    fields = _ENTRY_FIELDS[version]
    if record.keys() != fields.keys():
        missing = sorted(fields.keys() - record.keys())
        extra = sorted(record.keys() - fields.keys())
        raise EntryFormatError(
            f"format {version} entry fields wrong: missing {missing}, unexpected {extra}"
        )
    for key, kind in fields.items():
        if kind is not object and type(record[key]) is not kind:
            raise EntryFormatError(f"entry field {key!r} must be {kind.__name__}")
    if version >= 2:
        _check_chain_fields(record)
    generator = record["generator"]
    if generator.keys() != _GENERATOR_FIELDS.keys():
        raise EntryFormatError(
            f"entry field 'generator' must hold exactly {sorted(_GENERATOR_FIELDS)}, not "
            f"{sorted(generator)}"
        )
    for key, kind in _GENERATOR_FIELDS.items():
        if type(generator.get(key)) is not kind:
            raise EntryFormatError(f"entry field 'generator.{key}' must be {kind.__name__}")
    try:
        _check_time(record["time"])
    except ValueError as e:
        raise EntryFormatError(
            f"entry time {record['time']!r} is not RFC 3339 with 6 digits"
        ) from e
    try:
        encoded = canonical.reencode(record, ascii_keys=True)
    except canonical.CanonicalJsonError as e:
        raise EntryFormatError(str(e)) from e
    if encoded != data:
        raise EntryFormatError("entry bytes are not in canonical form")
    return record


def _check_chain_fields(record: dict[str, Any]) -> None:
    """Format 2's rules for slot, table_seq and table_prev (as LogEntry.decode has them)."""
    seq, prev, index = record["table_seq"], record["table_prev"], record["index"]
    if not record["slot"]:
        raise EntryFormatError("entry field 'slot' must be a non-empty string")
    if seq < 1:
        raise EntryFormatError("entry field 'table_seq' must be an integer from 1")
    if prev is None:
        if seq != 1:
            raise EntryFormatError(
                f"entry field 'table_prev' is null but table_seq is {seq}, not 1"
            )
    elif type(prev) is not int or not 0 <= prev < index:
        raise EntryFormatError(f"entry field 'table_prev' must be null or an index below {index}")
    elif seq == 1:
        raise EntryFormatError("entry field 'table_prev' must be null when table_seq is 1")


def _chain_name(chain: tuple[bytes, bytes]) -> str:
    client, table = (json.loads(part) for part in chain)
    return f"table {table!r} of client {client!r}"


class ChainTracker:
    """Follows every (client, table) chain of a log read in index order, from its first entry
    (docs/log-format.md, "Slots and chains"): each chain starts at table_seq 1 and goes on by 1,
    each entry naming the chain's previous entry as its table_prev. Memory: one pair of
    integers per chain."""

    def __init__(self) -> None:
        # chain -> [index, table_seq] of its last entry, updated in place (one dict lookup
        # an entry)
        self._heads: dict[tuple[bytes, bytes], list[int]] = {}

    @property
    def chains(self) -> int:
        return len(self._heads)

    def add(self, position: int, line: int, shape: EntryShape) -> None:
        """The next format-2 entry; raises :class:`VerificationFailure` at a break."""
        chain, seq, prev = shape.chain, shape.seq, shape.prev
        if chain is None or seq is None:  # not reached: the caller passes format 2 shapes
            raise RuntimeError(f"entry {position} has no table chain")
        head = self._heads.get(chain)
        if head is None:
            if seq != 1:
                raise VerificationFailure(
                    f"{_at(position, line)} is seq {seq} of the chain of {_chain_name(chain)} "
                    f"(its predecessor: entry {prev}), but the log has no earlier entry of that "
                    f"chain: {'seq 1 is' if seq == 2 else f'seq 1 to {seq - 1} are'} missing",
                    index=position,
                )
            self._heads[chain] = [position, seq]
            return
        if seq == 1:
            raise VerificationFailure(
                f"{_at(position, line)} starts the chain of {_chain_name(chain)} again (seq 1), "
                f"but it already has seq {head[1]} at entry {head[0]}: the sequencer numbered "
                f"a table twice",
                index=position,
            )
        if seq != head[1] + 1 or prev != head[0]:
            raise VerificationFailure(
                f"{_at(position, line)} is seq {seq} of the chain of {_chain_name(chain)} and "
                f"names entry {prev} as its predecessor, but the chain's previous entry is entry "
                f"{head[0]} (seq {head[1]}): the chain is broken",
                index=position,
            )
        head[0], head[1] = position, seq


def _at(position: int, line: int) -> str:
    return f"entry {position} (line {line})"


def _text(part: bytes) -> str:
    """The value of a canonical JSON string of an entry (for messages)."""
    value: str = json.loads(part)
    return value


_SLOT_OF_KIND = {json_bytes(k): json_bytes(v) for k, v in rounds.KIND_SLOTS.items()}
_LEGACY_SLOT = {
    json_bytes(k): json_bytes(v)
    for k in (*rounds.KIND_SLOTS, *rounds.GENERIC_KINDS)
    if (v := rounds.slot_of_legacy(k)) is not None
}
_LAB_KINDS = frozenset(json_bytes(k) for k in rounds.LAB_KINDS)
_RESERVED_SLOTS = frozenset(json_bytes(s) for s in rounds.RESERVED_SLOTS)
_LAB_SLOT = b'"' + rounds.LAB_SLOT_PREFIX.encode("ascii")
_VOID_KIND = json_bytes(rounds.VOID_KIND)
_SPIN = json_bytes(rounds.KIND_SLOTS[rounds.SPIN_KIND])
_FIRE = json_bytes(rounds.KIND_SLOTS[rounds.FIRE_NUMBERS_KIND])
_BONUS = json_bytes(rounds.KIND_SLOTS[rounds.BONUS_KIND])
_JACKPOT = json_bytes(rounds.KIND_SLOTS[rounds.JACKPOT_KIND])
_SPIN_KIND = json_bytes(rounds.SPIN_KIND)
_FIRE_KIND = json_bytes(rounds.FIRE_NUMBERS_KIND)
_BONUS_KIND = json_bytes(rounds.BONUS_KIND)
_JACKPOT_KIND = json_bytes(rounds.JACKPOT_KIND)
_MULTIBALL_KIND = json_bytes(rounds.MULTIBALL_KIND)
#: The final numbers of 617c.2(e) as they appear between the quotes of a canonical entry.
_BLAZING_7S_BYTES = frozenset(n.encode("ascii") for n in rounds.BLAZING_7S_TRIGGERS)


class RoundTracker:
    """The round rules over a whole log read in index order (docs/log-format.md, "Slots and
    chains"; docs/outcomes-api.md, "Rounds and slots"), from the entries' signed bytes:

    - each (client, table, round, slot) is filled at most once: a second entry for it is a game
      event drawn twice (format 1 entries fill the slot of their kind, the first one of a round,
      so a round begun before the upgrade is not drawn again after it; several format 1 entries
      of one round are allowed, format 1 had no slots);
    - each request id at most once per client (the idempotency key: a retry is answered with
      the logged entry, never logged again);
    - a slot agrees with its kind (a game kind its own slot, a lab entry ``lab/<request id>``,
      a generic draw no game kind's slot), so that no entry escapes the first rule under
      another slot name;
    - nothing in a round after its void;
    - Mega Fire Blaze (58 Pa. Code 617b.7): the Fire Numbers before the round's spin (e), that
      spin on a single zero wheel (a), the bonus game after a Fire Number draw and a spin of its
      round that came to rest on a Fire Number (f), naming both entries, under the draw's
      profile and with its Fire Number count (g)(3); no jackpot tier draw in a round with Fire
      Numbers or a bonus game, and no Fire Numbers in a round with a jackpot tier draw (the
      jackpot's tier is drawn inside the bonus game, (g)(5)(ii));
    - Blazing 7's (58 Pa. Code 617c.2(e)): a multi-ball draw that names a spin
      (``spin_index``: a game server's, which the sequencer links) names its round's spin,
      which came to rest on 7, 17 or 27 on the same wheel type. One that names none is a
      lab's draw of the balls alone: the log does not record the client's role, so that its
      client is no game server is in the service's configuration, not in the signed bytes.

    Format 1 entries (release 1, before slots) fill their slots but are held to no order rule:
    release 1 had none of these rules. Format 2 is the first format the service writes with
    them.

    Memory: two keys per entry (its round and slot, its client and request id: the entries' own
    JSON strings, about 150 bytes an entry in all), plus the numbers of each Fire Number draw,
    the final number of each spin of a round with Fire Numbers, and the wheel of each spin that
    came to rest on 7, 17 or 27.
    """

    def __init__(self) -> None:
        self._filled: dict[bytes, int] = {}
        self._requests: dict[bytes, int] = {}
        self._fire: dict[int, tuple[Any, Any, Any]] = {}  # index -> numbers, count, profile
        self._final: dict[int, Any] = {}  # index of a spin of a round with Fire Numbers -> number
        self._blazing: dict[int, Any] = {}  # index of a spin on 7, 17 or 27 -> its wheel
        # Rounds with a void, with Fire Numbers: few, so that most entries look up nothing more.
        self._voided: dict[bytes, int] = {}
        self._fire_rounds: set[bytes] = set()

    def add(self, position: int, line: int, shape: EntryShape, data: bytes) -> None:
        """The next entry; raises :class:`VerificationFailure` at a broken rule."""
        prior = self._requests.setdefault(shape.client + shape.request_id, position)
        if prior != position:
            raise VerificationFailure(
                f"{_at(position, line)} has request id {_text(shape.request_id)!r} of client "
                f"{_text(shape.client)!r}, which entry {prior} already has: a request id is "
                f"logged once (a retry is answered with the logged entry), so one request was "
                f"drawn twice",
                index=position,
            )
        slot, kind = shape.slot, shape.kind
        round_key = shape.client + shape.table_id + shape.round_id
        filled = self._filled
        if slot is None:  # format 1: the slot of its kind, if it has one, from its first entry
            legacy = _LEGACY_SLOT.get(kind)
            if legacy is None:
                return
            first = filled.setdefault(round_key + legacy, position)
            if first == position and kind in _ORDERED:
                self._remember(position, kind, round_key, _record(data))
            if first == position and kind == _SPIN_KIND:
                self._blazing_7(position, data)
            return
        # A slot agrees with its kind: a game kind's own slot (any other, a lab slot too, is
        # wrong), a lab entry's lab/<request id>, a generic draw's neither a game kind's slot
        # nor a lab slot.
        own = _SLOT_OF_KIND.get(kind)
        if own is not None:
            if slot != own:
                raise self._slot_of_kind(position, line, shape)
        elif kind in _LAB_KINDS:
            if slot != _LAB_SLOT + shape.request_id[1:]:
                raise self._slot_of_kind(position, line, shape)
            return  # a lab entry's slot is its own: no round rules
        elif slot in _RESERVED_SLOTS or slot.startswith(_LAB_SLOT):
            raise self._slot_of_kind(position, line, shape)
        void = self._voided.get(round_key) if self._voided else None
        if void is not None:
            raise VerificationFailure(
                f"{_at(position, line)} is in {self._slot_name(shape)}, but that round was "
                f"voided at entry {void}: nothing is drawn in a round after its void",
                index=position,
            )
        prior = filled.setdefault(round_key + slot, position)
        if prior != position:
            raise VerificationFailure(
                f"{_at(position, line)} fills {self._slot_name(shape)}, which entry {prior} "
                f"already filled: a game event was drawn twice",
                index=position,
            )
        if kind == _SPIN_KIND:
            self._blazing_7(position, data)
        if kind == _VOID_KIND:
            self._voided[round_key] = position
        elif kind in _ORDERED and (
            kind != _SPIN_KIND or (self._fire_rounds and round_key in self._fire_rounds)
        ):
            self._order(position, line, shape, round_key, data)

    def _blazing_7(self, position: int, data: bytes) -> None:
        """Remembers the wheel of a spin that came to rest on 7, 17 or 27 (617c.2(e)).

        Most spins are not decoded: in the canonical bytes the first ``"final":{`` is the
        outcome's final spin (no member before ``outcome`` has one, and a ``"`` inside a string
        is escaped), and the first ``"number":"`` after it is that spin's number (its only
        member before ``number`` is ``colour``); a spin's params are ``{"wheel": ...}``. (Round
        rules run only on entries checked canonical.) A spin of another shape is decoded."""
        at = data.find(b'"final":{')
        if at < 0:
            return
        at = data.find(b'"number":"', at)
        if at < 0:
            return
        at += 10
        if data[at : data.find(b'"', at)] not in _BLAZING_7S_BYTES:
            return
        at = data.find(b'"params":{"wheel":"')
        if at >= 0:
            at += 19
            end = data.find(b'"', at)
            if data[end : end + 2] == b'"}':
                self._blazing[position] = data[at:end].decode("ascii", "replace")
                return
        record = _record(data)
        final = record["outcome"].get("final")
        number = final.get("number") if isinstance(final, dict) else None
        if number in rounds.BLAZING_7S_TRIGGERS:
            self._blazing[position] = record["params"].get("wheel")

    def _remember(self, position: int, kind: bytes, round_key: bytes, record: Any) -> None:
        """What a later entry of the round is checked against: a Fire Number draw's numbers,
        count and profile; the final number of a spin of a round with Fire Numbers."""
        outcome = record["outcome"]
        if kind == _FIRE_KIND:
            self._fire_rounds.add(round_key)
            self._fire[position] = (
                outcome.get("numbers"), outcome.get("count"), record["profile_sha256"]
            )  # fmt: skip
        elif kind == _SPIN_KIND and round_key in self._fire_rounds:
            final = outcome.get("final")
            self._final[position] = final.get("number") if isinstance(final, dict) else None

    def _order(
        self, position: int, line: int, shape: EntryShape, round_key: bytes, data: bytes
    ) -> None:
        """Mega Fire Blaze's order within a round (58 Pa. Code 617b.7)."""
        kind = shape.kind
        fire = self._filled.get(round_key + _FIRE)
        spin = self._filled.get(round_key + _SPIN)

        def broken(why: str) -> VerificationFailure:
            return VerificationFailure(
                f"{_at(position, line)} ({_text(kind)}) in {self._slot_name(shape)} breaks the "
                f"round's order: {why}",
                index=position,
            )

        if kind == _FIRE_KIND and spin is not None:
            raise broken(
                f"the Fire Numbers come before the round's spin (58 Pa. Code 617b.7(e)), "
                f"which is entry {spin}"
            )
        if kind in (_FIRE_KIND, _JACKPOT_KIND):
            if kind == _FIRE_KIND:
                held, what = self._filled.get(round_key + _JACKPOT), "a jackpot tier draw"
            else:
                held = fire if fire is not None else self._filled.get(round_key + _BONUS)
                what = "Fire Numbers" if fire is not None else "a bonus game"
            if held is not None:
                raise broken(
                    f"the round has {what} (entry {held}): in Mega Fire Blaze Roulette the "
                    "jackpot's tier is drawn inside the bonus game (58 Pa. Code "
                    "617b.7(g)(5)(ii)), so a round holds a jackpot tier draw or Fire Numbers, "
                    "not both"
                )
            if kind == _JACKPOT_KIND:
                return
        if kind == _MULTIBALL_KIND:
            self._multiball(position, line, shape, spin, data, broken)
            return
        if fire is None and kind == _SPIN_KIND:
            return  # a spin of a round without Fire Numbers: the common case, nothing to read
        record = _record(data)
        params = record["params"]
        if kind == _SPIN_KIND and params.get("wheel") != "single_zero":
            raise broken(
                f"the round has Fire Numbers (entry {fire}), so it is spun on a single zero "
                f"wheel (58 Pa. Code 617b.7(a)), not {params.get('wheel')!r}"
            )
        if kind == _BONUS_KIND:
            if fire is None or spin is None:
                missing = "no Fire Number draw" if fire is None else "no spin"
                raise broken(
                    "a bonus game follows the round's Fire Number draw and its spin (58 Pa. "
                    f"Code 617b.7(e), (f)); the round has {missing} before it"
                )
            numbers, count, profile = self._fire.get(fire, (None, None, None))
            number = self._final.get(spin)
            links = (params.get("fire_numbers_index"), params.get("spin_index"))
            if links != (fire, spin):
                raise broken(
                    f"it names Fire Number draw {links[0]} and spin {links[1]}, but the round's "
                    f"are entries {fire} and {spin}"
                )
            if not isinstance(numbers, list) or number not in numbers:
                raise broken(
                    f"the round's spin (entry {spin}) came to rest on {number}, not on one of "
                    f"its Fire Numbers {numbers} (entry {fire}): there is no bonus game "
                    f"(58 Pa. Code 617b.7(f))"
                )
            if params.get("fire_number_count") != count or record["profile_sha256"] != profile:
                raise broken(
                    f"its Fire Number count or profile is not that of the round's Fire Number "
                    f"draw (entry {fire}: {count} numbers; 58 Pa. Code 617b.7(g)(3))"
                )
        self._remember(position, kind, round_key, record)

    def _multiball(
        self,
        position: int,
        line: int,
        shape: EntryShape,
        spin: int | None,
        data: bytes,
        broken: Callable[[str], VerificationFailure],
    ) -> None:
        """A game server's Blazing 7's bonus round (one that names a spin) follows its round's
        spin on 7, 17 or 27 on the same wheel type (58 Pa. Code 617c.2(e))."""
        if b'"spin_index":' not in data:
            return  # a lab's draw of the balls alone (see the class docstring)
        params = _record(data)["params"]
        named = params.get("spin_index")
        if named is None:
            return
        if spin is None or named != spin:
            held = "has no spin" if spin is None else f"has its spin at entry {spin}"
            raise broken(
                f"it names spin {named}, but the round {held}: a game server's Blazing 7's "
                "bonus round follows its round's spin (58 Pa. Code 617c.2(e))"
            )
        wheel = params.get("wheel")
        if self._blazing.get(spin, False) != wheel:
            raise broken(
                f"the round's spin (entry {spin}) did not come to rest on 7, 17 or 27 on a "
                f"{wheel} wheel: there is no Blazing 7's bonus round (58 Pa. Code 617c.2(e))"
            )

    @staticmethod
    def _slot_name(shape: EntryShape) -> str:
        slot = "?" if shape.slot is None else _text(shape.slot)
        return (
            f"slot {slot!r} of round {_text(shape.round_id)!r} of table "
            f"{_text(shape.table_id)!r} (client {_text(shape.client)!r})"
        )

    def _slot_of_kind(self, position: int, line: int, shape: EntryShape) -> VerificationFailure:
        return VerificationFailure(
            f"{_at(position, line)} is a {_text(shape.kind)} entry in "
            f"{self._slot_name(shape)}: that is not its kind's slot (a game kind fills its "
            f"own, a lab entry 'lab/<request id>', a generic draw none of the game kinds' "
            f"slots)",
            index=position,
        )


_ORDERED = frozenset({_SPIN_KIND, _FIRE_KIND, _BONUS_KIND, _JACKPOT_KIND, _MULTIBALL_KIND})


def _record(data: bytes) -> Any:
    """The decoded entry (its bytes were checked canonical before)."""
    return json.loads(data)


def _fold(stack: Sequence[bytes]) -> bytes:
    """The root of a tree from its right edge (complete subtrees, largest first)."""
    if not stack:
        return EMPTY_ROOT
    root = stack[-1]
    for h in reversed(stack[:-1]):
        root = node_hash(h, root)
    return root


def _beyond(position: int, line: int, tree_size: int, covered: int) -> NoReturn:
    where = f"entry {position} (line {line})"
    if position >= tree_size:
        raise VerificationFailure(
            f"{where}: the export has more entries than the {tree_size} its header "
            f"declares: an entry was inserted",
            index=position,
        )
    raise VerificationFailure(
        f"{where}: no signed checkpoint covers it (the newest one is for tree size "
        f"{covered}): the entry cannot be verified, it may have been forged",
        index=position,
    )


def verify_export(
    lines: Iterable[str],
    verifiers: Sequence[NoteVerifier],
    *,
    kept: Sequence[tuple[str, str | bytes]] = (),
    want_sizes: Iterable[int] = (),
    want_indices: Iterable[int] = (),
    check_entries: bool = True,
    origin: PinnedOrigin | None = None,
    allow_empty: bool = False,
    witnesses: Sequence[CosignatureVerifier] = (),
    min_witnesses: int = 0,
    now: int | None = None,
    witness_cover: int | None = None,
    max_witness_age: int | None = None,
) -> ExportReport:
    """Verifies a whole export (see the module docstring) with the given verifier keys.

    ``check_entries=False`` skips checking each entry (canonical form, fields, its own index,
    the table chains), about a quarter of the cost on a log of few entry shapes: every change
    is still caught by the leaf hashes, the tree and the signatures, but is then located only
    between two checkpoints.

    Every (client, table) chain of format-2 entries is followed from its first entry
    (:class:`ChainTracker`): a break, a restart or a chain that starts after seq 1 fails.

    ``kept``: (source name, signed note) of checkpoints the auditor kept from earlier; they must
    be consistent with the export too (a truncated or forked export fails against them).
    ``origin``: the log the export must be of (:func:`pinned_origin`); None trusts the header.
    An export with no entries or no checkpoint fails (it proves nothing) unless
    ``allow_empty``. ``witnesses``, ``min_witnesses``, ``now`` (POSIX seconds): witness
    cosignatures on the checkpoints are checked by the rule of :mod:`rng_service.audit.witnesses`
    (a failure there is a :class:`~rng_service.audit.witnesses.WitnessFailure`): with
    ``min_witnesses`` >= 1 a checkpoint they cosigned must cover ``witness_cover`` entries (by
    default all the export's: its newest entry), and be no older than ``max_witness_age``
    seconds if given.
    Returns an :class:`ExportReport`; raises :class:`VerificationFailure` at the first problem,
    :class:`~rng_service.audit.export.ExportFormatError` or :class:`InvalidArgument` for
    malformed input.

    The steps, in order: the header (:func:`_check_header`), the signed checkpoints
    (:func:`_open_checkpoints`), their sizes (:func:`_heads_by_size`), one pass over the
    entries (:func:`_walk_entries`: each entry's line, leaf hash and fields, the tree and its
    roots at the checkpoints' sizes), the witnesses' cosignatures; then the report.
    """
    if not verifiers:
        raise InvalidArgument("key", "at least one verifier key is needed")
    reader = ExportReader(lines)
    header = _check_header(reader.header, origin=origin, allow_empty=allow_empty)
    heads, notes = _open_checkpoints(reader, kept, verifiers, origin=header.origin)
    tree = _TreeCheck(_heads_by_size(heads, header.tree_size), want_sizes)
    fields = _EntryFields(header.format) if check_entries else None
    leaves, last = _walk_entries(reader, header.tree_size, tree, fields, set(want_indices))
    witnessed = None
    if witnesses:
        # After the tree: every checkpoint here is then known to be of the exported entries.
        cover = tree.size if witness_cover is None else witness_cover
        witnessed = check_witnesses(
            notes, witnesses, min_witnesses=min_witnesses, now=_now() if now is None else now,
            cover=cover, newest_entry_time=_entry_time(last),
            cover_what=None if witness_cover is None else f"tree size {cover}",
            max_age_seconds=max_witness_age,
        )  # fmt: skip
    return ExportReport(
        origin=header.origin,
        tree_size=tree.size,
        root_hash=tree.root(),
        heads=tuple(heads),
        roots=tree.roots,
        leaves=leaves,
        kept=len(kept),
        first_format_2=None if fields is None else fields.first_format_2,
        witnessed=witnessed,
        chains=None if fields is None else fields.chains.chains,
    )


def _check_header(
    header: ExportHeader, *, origin: PinnedOrigin | None, allow_empty: bool
) -> ExportHeader:
    """Step 1: the export is of the expected log, and (unless ``allow_empty``) holds at least
    one entry and one checkpoint."""
    if origin is not None:
        origin.check(header.origin, "the export")
    if not allow_empty and (header.tree_size == 0 or header.checkpoints == 0):
        missing = "no entries" if header.tree_size == 0 else "no checkpoint"
        raise VerificationFailure(
            f"the export has {missing} (header: {header.tree_size} entries, "
            f"{header.checkpoints} checkpoints): it proves nothing about the log. An empty log "
            f"is accepted only with --allow-empty",
            index=0,
        )
    return header


def _open_checkpoints(
    reader: ExportReader,
    kept: Sequence[tuple[str, str | bytes]],
    verifiers: Sequence[NoteVerifier],
    *,
    origin: str,
) -> tuple[list[VerifiedHead], list[tuple[str, bytes]]]:
    """Step 2: every checkpoint of the export, then every kept one, is signed by a given key
    and of ``origin``; returns them and their notes (source, bytes) for the witnesses."""
    notes: list[tuple[str, bytes]] = []
    heads = []
    for c in reader.checkpoints():
        source = f"checkpoint at line {c.line}"
        heads.append(open_head(c.note, verifiers, source=source, origin=origin))
        notes.append((source, _bytes(c.note)))
    for src, note in kept:
        heads.append(open_head(note, verifiers, source=src, origin=origin))
        notes.append((src, _bytes(note)))
    return heads, notes


def _heads_by_size(heads: Sequence[VerifiedHead], tree_size: int) -> dict[int, list[VerifiedHead]]:
    """Step 3: the checkpoints by tree size. Two of one size with different roots are a fork;
    one beyond the export's ``tree_size`` entries means a truncated export."""
    by_size: dict[int, list[VerifiedHead]] = {}
    for head in heads:
        same = by_size.setdefault(head.checkpoint.size, [])
        if same and same[0].checkpoint.root_hash != head.checkpoint.root_hash:
            raise VerificationFailure(
                f"fork: {same[0].source} and {head.source} are both for tree size "
                f"{head.checkpoint.size} but have different roots "
                f"({same[0].checkpoint.root_hash.hex()} vs {head.checkpoint.root_hash.hex()})"
            )
        same.append(head)
    for size, same in sorted(by_size.items()):
        if size > tree_size:
            raise VerificationFailure(
                f"{same[0].source} is for tree size {size}, but the export has only "
                f"{tree_size} entries: the export is truncated (or the checkpoint is "
                f"from another log or a fork)",
                index=tree_size,
            )
    return by_size


class _TreeCheck:
    """The RFC 6962 tree of the entries read so far (its right edge: the roots of the complete
    subtrees, largest first, one for each 1 bit of their number; RFC 6962 section 2.1) and its
    root at every checkpoint's size against the checkpoints of that size."""

    def __init__(self, by_size: dict[int, list[VerifiedHead]], want_sizes: Iterable[int]) -> None:
        self.by_size = by_size
        self.covered = max(by_size, default=0)
        """The newest checkpoint's size: no entry at or beyond it is signed."""
        self.check_at = set(by_size).union(want_sizes)
        self.roots: dict[int, bytes] = {}
        self.stack: list[bytes] = []
        self.size = 0
        self._last_ok = 0
        if 0 in self.check_at:
            self.check_root(0, EMPTY_ROOT)

    def root(self) -> bytes:
        return _fold(self.stack)

    def check_root(self, size: int, root: bytes) -> None:
        """The root of the first ``size`` entries against every checkpoint of that size."""
        self.roots[size] = root
        for head in self.by_size.get(size, ()):
            if head.checkpoint.root_hash != root:
                raise VerificationFailure(
                    f"{head.source} (tree size {size}) does not match the entries: they hash "
                    f"to root {root.hex()}, the checkpoint says "
                    f"{head.checkpoint.root_hash.hex()}. An entry in [{self._last_ok}, {size}) "
                    f"was changed, inserted, deleted or reordered, or the checkpoint is from a "
                    f"fork (not consistent with the checkpoints before it)",
                    index=self._last_ok,
                )
        if size in self.by_size:
            self._last_ok = size


def _walk_entries(
    reader: ExportReader,
    tree_size: int,
    tree: _TreeCheck,
    fields: _EntryFields | None,
    wanted: set[int],
) -> tuple[dict[int, bytes], bytes | None]:
    """Step 4, the one pass over the entries: each line's index, its coverage by a checkpoint,
    its leaf hash and (with ``fields``) the entry itself; each leaf onto the tree's right edge,
    and the root at every size the tree checks. Returns the leaf hashes of the ``wanted``
    indices and the newest entry's bytes (None if there is none). This loop is the verifier's
    hot path: its state stays in local variables."""
    leaves: dict[int, bytes] = {}
    stack = tree.stack
    check_at = tree.check_at
    limit = min(tree_size, tree.covered)
    sha256 = hashlib.sha256
    check_fields = None if fields is None else fields.check
    position = 0
    data: bytes | None = None
    for line, index, leaf_hash, data in reader.entry_rows():
        if index != position:
            raise VerificationFailure(
                f"entry {position} (line {line}): its index field is {index}, expected "
                f"{position}: entries were deleted, inserted or reordered",
                index=position,
            )
        if position >= limit:
            _beyond(position, line, tree_size, tree.covered)
        leaf = sha256(LEAF_PREFIX + data).digest()
        if leaf != leaf_hash:
            raise VerificationFailure(
                f"entry {position} (line {line}): leaf_hash {leaf_hash.hex()} is not "
                f"SHA-256(0x00 || entry) = {leaf.hex()}: the entry bytes were changed",
                index=position,
            )
        if check_fields is not None:
            check_fields(position, line, data)
        if position in wanted:
            leaves[position] = leaf
        # Push the leaf onto the right edge, merging equal-sized complete subtrees
        # (RFC 6962 section 2.1: MTH of a power-of-two range): one merge for each trailing
        # 1 bit of the leaf's index.
        value, bits = leaf, position
        while bits & 1:
            value = sha256(NODE_PREFIX + stack.pop() + value).digest()
            bits >>= 1
        stack.append(value)
        position += 1
        if position in check_at:
            tree.check_root(position, _fold(stack))
    tree.size = position
    if position != tree_size:
        raise VerificationFailure(
            f"the export ends after {position} entries (line {reader.line}) but its header "
            f"declares {tree_size}: the export is truncated",
            index=position,
        )
    return leaves, data


class _EntryFields:
    """Step 4's check of each entry's own bytes (``check_entries``): canonical form and the
    fields of its format (:class:`EntryChecker`), its own index, a format that never goes back
    from 2 to 1, the (client, table) chains of format 2 (:class:`ChainTracker`), and the round
    rules across the whole log (:class:`RoundTracker`)."""

    def __init__(self, export_format: str) -> None:
        self._inspect = EntryChecker(canonical_entry).inspect
        self._v1_export = export_format == _V1_EXPORT
        self.chains = ChainTracker()
        self._chain = self.chains.add
        self._rounds = RoundTracker().add
        self.first_format_2: int | None = None

    def check(self, position: int, line: int, data: bytes) -> None:
        try:
            shape = self._inspect(data)
        except EntryFormatError as e:
            raise VerificationFailure(
                f"entry {position} (line {line}): not a canonical entry ({e}): the entry "
                f"was changed",
                index=position,
            ) from e
        if shape[0] != position:
            raise VerificationFailure(
                f"entry {position} (line {line}): the entry's own index field says "
                f"{shape.entry_index}: it was moved or forged",
                index=position,
            )
        # The log's format never goes back: format 2 from the first format-2 entry on
        # (where every table chain starts; docs/log-format.md).
        version = shape[1]
        if version >= 2:
            if self._v1_export:
                raise ExportFormatError(
                    line, "entry", f"a format {version} entry in an {_V1_EXPORT} file"
                )
            if self.first_format_2 is None:
                self.first_format_2 = position
            self._chain(position, line, shape)
        elif self.first_format_2 is not None:
            raise VerificationFailure(
                f"entry {position} (line {line}): a format {version} entry after the "
                f"format 2 entry {self.first_format_2}: the log's entry format never goes "
                "back, so it was inserted or forged",
                index=position,
            )
        self._rounds(position, line, shape, data)


def _bytes(note: str | bytes) -> bytes:
    return note.encode("utf-8") if isinstance(note, str) else note


def _entry_time(data: bytes | None) -> int | None:
    """An entry's ``time`` as POSIX seconds (for the witnesses' message), or None if it has
    none that parses (its fields are checked elsewhere)."""
    if data is None:
        return None
    try:
        record = json.loads(data)
        stamp = datetime.datetime.strptime(record["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
    except (ValueError, TypeError, KeyError):
        return None
    return int(stamp.replace(tzinfo=datetime.UTC).timestamp())


def _now() -> int:
    return int(datetime.datetime.now(tz=datetime.UTC).timestamp())


def check_receipt_against_export(
    receipt: Receipt, verified: VerifiedReceipt, report: ExportReport
) -> None:
    """Checks that a verified receipt belongs to the exported log: its checkpoint is a prefix
    of the export's tree (consistent with all its checkpoints) and its entry is at its index.

    ``report`` must come from :func:`verify_export` with ``want_sizes`` holding the receipt's
    tree size and ``want_indices`` its index.
    """
    size, index = verified.checkpoint.size, receipt.index
    if verified.checkpoint.origin != report.origin:
        raise VerificationFailure(
            f"the receipt is for log {verified.checkpoint.origin!r}, the export for "
            f"{report.origin!r}"
        )
    if size > report.tree_size:
        raise VerificationFailure(
            f"the receipt's tree size {size} is beyond the export's {report.tree_size} entries: "
            f"export the log again (or the log lost entries)",
            index=report.tree_size,
        )
    if report.roots.get(size) != verified.checkpoint.root_hash:
        raise VerificationFailure(
            f"fork: the receipt's checkpoint (tree size {size}) has root "
            f"{verified.checkpoint.root_hash.hex()}, but the export's entries give "
            f"{report.roots.get(size, b'').hex()}: not consistent with the exported log"
        )
    if report.leaves.get(index) != receipt.leaf_hash:
        raise VerificationFailure(
            f"the export's entry {index} is not the receipt's entry", index=index
        )


def check_receipt_against_head(
    receipt: Receipt,
    verified: VerifiedReceipt,
    head: VerifiedHead,
    *,
    consistency_proof: Sequence[bytes],
    inclusion_proof: Sequence[bytes],
) -> None:
    """Checks a verified receipt against a newer verified checkpoint of the same log: the
    receipt's checkpoint is consistent with it (RFC 9162 section 2.1.4.2) and the receipt's
    entry is included in it (RFC 9162 section 2.1.3.2), with proofs fetched from anywhere."""
    old, new = verified.checkpoint, head.checkpoint
    if old.origin != new.origin:
        raise VerificationFailure(
            f"the receipt is for log {old.origin!r}, {head.source} for {new.origin!r}"
        )
    if old.size > new.size:
        raise VerificationFailure(
            f"the receipt's tree size {old.size} is beyond {head.source}'s size {new.size}: "
            f"the log has lost entries, or this is another log"
        )
    try:
        verify_consistency(old.size, new.size, consistency_proof, old.root_hash, new.root_hash)
    except ProofError as e:
        raise VerificationFailure(
            f"fork: the receipt's checkpoint (size {old.size}) is not consistent with "
            f"{head.source} (size {new.size}): {e}"
        ) from e
    try:
        verify_inclusion(receipt.leaf_hash, receipt.index, new.size, inclusion_proof, new.root_hash)
    except ProofError as e:
        raise VerificationFailure(
            f"the receipt's entry {receipt.index} is not in the log of {head.source}: {e}",
            index=receipt.index,
        ) from e
