"""Offline verification of a log export and of receipts against a log: the auditor's core.

Owns :func:`verify_export` (docs/auditing.md, "4. Verify a whole export"): from an export and
the log's verifier keys only, every checkpoint is a C2SP signed checkpoint of the expected
origin whose root is that of the entries at its size (RFC 6962 section 2.1; so all are
consistent, RFC 9162 section 2.1.4), every entry is hashed, checked and in a checkpoint; and
the reference check of an entry, :func:`canonical_entry` (docs/log-format.md, "Entries"), the
one a reviewer reads. The one pass over the entries is :mod:`rng_service.audit.walk`, the
round rules :mod:`rng_service.audit.rounds_check`, the table map and its committed roots
:mod:`rng_service.audit.map_check` (docs/log-format.md, "Table map"); receipts are checked
against an export or a newer checkpoint (RFC 9162 sections 2.1.3.2, 2.1.4.2). Failures are
:class:`VerificationFailure`; no I/O (``rng-audit`` does it).
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rng_service import canonical
from rng_service.audit.export import ExportHeader, ExportReader
from rng_service.audit.results import VerificationFailure, VerifiedHead
from rng_service.audit.walk import EntryFields, TreeCheck, walk_entries
from rng_service.audit.witnesses import WitnessReport, check_witnesses
from rng_service.errors import InvalidArgument
from rng_service.log.cosignature import CosignatureVerifier
from rng_service.log.entry import EntryFormatError
from rng_service.log.merkle import (
    ProofError,
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
    parse_note,
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
    """Index of the first entry of format 2 or later (where the table chains start); None if
    there is none, or if the entries were not checked (``check_entries=False``)."""
    first_format_3: int | None = None
    """Index of the first format-3 entry (where the committed table map roots start); None if
    there is none, or if the entries were not checked."""
    map_roots: int | None = None
    """How many committed table map roots (one per format 3 entry) were recomputed from the
    entries and found equal; None if the entries were not checked."""
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
        # The origin first, unverified: another log's checkpoint (signed by its own key, a
        # service answering for the wrong log) is named as such, with both origins, rather
        # than as a checkpoint none of the given keys signed.
        named = Checkpoint.parse(parse_note(message).text).origin
        if origin is not None and named != origin:
            raise VerificationFailure(
                f"{source} is a checkpoint of log {named!r}, not of {origin!r}"
            )
        opened = open_note(message, verifiers)
        checkpoint = Checkpoint.parse(opened.text)
    except (UnverifiedNote, InvalidNoteSignature) as e:
        raise VerificationFailure(f"{source}: {e}") from e
    except MalformedNote as e:
        raise InvalidArgument(source, f"not a signed checkpoint: {e}") from e
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
#: Format 3 adds the table map's root after the entry (64 lowercase hex digits).
_ENTRY_FIELDS_V3: dict[str, type] = {**_ENTRY_FIELDS_V2, "table_map": str}
_ENTRY_FIELDS = {1: _ENTRY_FIELDS_V1, 2: _ENTRY_FIELDS_V2, 3: _ENTRY_FIELDS_V3}
_MAP_ROOT = re.compile(r"[0-9a-f]{64}")
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
    """The ``index`` of canonical entry bytes (format version 1, 2 or 3, docs/log-format.md).

    Accepts what :meth:`rng_service.log.entry.LogEntry.decode` accepts (a test holds the two
    together; only the time's fraction is checked more strictly here) at a third of its cost:
    RFC 8785 canonical JSON restricted to integers below
    2^53, no floats, ASCII object keys; the fields of the entry's version with their JSON types
    (format 2: a non-empty slot, table_seq from 1, table_prev null exactly when table_seq is 1
    and else an earlier index; format 3 also ``table_map``, 64 lowercase hex digits); the time
    as RFC 3339 UTC with six fractional digits. Raises :class:`EntryFormatError`.

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
        raise EntryFormatError(f"unknown entry format version {version!r} (known: 1, 2, 3)")
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
    if version >= 3 and _MAP_ROOT.fullmatch(record["table_map"]) is None:
        raise EntryFormatError(
            "entry field 'table_map' must be 64 lowercase hex digits (the table map's root)"
        )
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
    the table chains and the committed table map roots), about a quarter of the cost on a log
    of few entry shapes: every change is still caught by the leaf hashes, the tree and the
    signatures, but is then located only between two checkpoints.

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

    The steps: the header, the signed checkpoints and their sizes, one pass over the entries
    (:func:`rng_service.audit.walk.walk_entries`), the witnesses' cosignatures, the report.
    """
    if not verifiers:
        raise InvalidArgument("key", "at least one verifier key is needed")
    reader = ExportReader(lines)
    header = _check_header(reader.header, origin=origin, allow_empty=allow_empty)
    heads, notes = _open_checkpoints(reader, kept, verifiers, origin=header.origin)
    tree = TreeCheck(_heads_by_size(heads, header.tree_size), want_sizes)
    fields = EntryFields(header.format, canonical_entry) if check_entries else None
    leaves, last = walk_entries(reader, header.tree_size, tree, fields, set(want_indices))
    witnessed = None
    if witnesses:
        # After the tree: every checkpoint here is then known to be of the exported entries.
        witnessed = _check_witnesses(
            notes, witnesses, tree.size, last, min_witnesses=min_witnesses, now=now,
            witness_cover=witness_cover, max_witness_age=max_witness_age,
        )  # fmt: skip
    return _report(header, tree, heads, leaves, len(kept), fields, witnessed)


def _check_witnesses(
    notes: list[tuple[str, bytes]],
    witnesses: Sequence[CosignatureVerifier],
    tree_size: int,
    last: bytes | None,
    *,
    min_witnesses: int,
    now: int | None,
    witness_cover: int | None,
    max_witness_age: int | None,
) -> WitnessReport:
    """Step 5: the witnesses' cosignatures on the checkpoints (see :func:`verify_export`)."""
    cover = tree_size if witness_cover is None else witness_cover
    return check_witnesses(
        notes, witnesses, min_witnesses=min_witnesses, now=_now() if now is None else now,
        cover=cover, newest_entry_time=_entry_time(last),
        cover_what=None if witness_cover is None else f"tree size {cover}",
        max_age_seconds=max_witness_age,
    )  # fmt: skip


def _report(
    header: ExportHeader,
    tree: TreeCheck,
    heads: list[VerifiedHead],
    leaves: dict[int, bytes],
    kept: int,
    fields: EntryFields | None,
    witnessed: WitnessReport | None,
) -> ExportReport:
    """What the steps established."""
    return ExportReport(
        origin=header.origin,
        tree_size=tree.size,
        root_hash=tree.root(),
        heads=tuple(heads),
        roots=tree.roots,
        leaves=leaves,
        kept=kept,
        first_format_2=None if fields is None else fields.first_format_2,
        first_format_3=None if fields is None else fields.first_format_3,
        map_roots=None if fields is None else fields.chains.roots,
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
