"""An entry's lookup columns against its signed bytes, and a lookup's rows against each other.

The store keeps, beside each entry's canonical bytes (docs/log-format.md, "Entries"), copies of
the fields it is looked up by: its index, leaf hash, client, request id, kind, table, round,
session, time, and (entry format 2) its slot and table sequence number. Lookups select rows by
those copies (``LogStorage.find_entries``, ``table_history``, ``entries``). Whoever can write
the database can change a copy without touching the signed bytes: an outcome would then be
answered for a round it is not of, or hidden from a lookup by its round. So every reader of a
lookup checks each row it returns here before it answers, and the store's own check
(:mod:`rng_service.writer.storecheck`) checks every row:

- :func:`check_record`: the row's leaf hash is RFC 6962's ``SHA-256(0x00 || bytes)`` and every
  lookup column equals the field of the signed bytes (the time column to the microsecond the
  entry's ``time`` field carries);
- :func:`check_nodes`: the row's leaf hash (which its bytes hash to, by :func:`check_record`)
  is the tree's stored level-0 node of its index, the leaf that every checkpoint's root
  commits to (RFC 6962 section 2.1): bytes edited together with their leaf-hash column (not
  the Merkle nodes) would otherwise pass the row check and be served as the logged outcome;
- :func:`check_range`: a range read by index holds every index of the range (no deleted row);
- :func:`check_chain`: rows read as a (client, table) chain are that chain: consecutive
  ``table_seq`` values, each ``table_prev`` the index of the row before (docs/log-format.md,
  "Slots and chains").

A failure is a :class:`LookupIntegrityError` (an ``IntegrityError``: DATA_LOSS at the RPC
boundary) naming the index, the column and both values, with ``check`` a fixed word for the
metric label. What a column check cannot see is a row whose columns were changed so that a
lookup does not select it at all; the chain (a table's rows between two of them are all there)
and the store's own check (every row) cover that.

The entry bytes are parsed as JSON only (no canonical re-encoding: the leaf hash binds them to
the signed tree; canonical form is the offline verifier's check, ``rng_service.audit``). Pure:
no store, no I/O.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rng_service.errors import IntegrityError
from rng_service.log.entry import format_time
from rng_service.log.merkle import LEAF_PREFIX
from rng_service.storage.base import EntryRecord

__all__ = [
    "CHECKS",
    "LookupIntegrityError",
    "SignedFields",
    "check_chain",
    "check_nodes",
    "check_range",
    "check_record",
    "signed_fields",
]

CHECKS = ("leaf_hash", "entry", "columns", "gap", "chain", "node", "map")
"""The ``check`` values of :class:`LookupIntegrityError` (the metric's label values):
``leaf_hash`` the bytes do not hash to the stored leaf hash; ``entry`` the bytes are not an
entry; ``columns`` a lookup column differs from the signed field; ``gap`` an index of a range is
missing; ``chain`` the rows of a table's chain do not follow one another; ``node`` the row's
leaf hash is not the tree's level-0 node of its index; ``map`` the map of table heads rebuilt
from the store does not reproduce the root signed in the tree's newest entry
(``rng_service.rpc.table_maps``)."""


class LookupIntegrityError(IntegrityError):
    """A stored row disagrees with its signed bytes, or rows are missing from a lookup.

    ``check``: one of :data:`CHECKS`; ``index``: the log index at fault (for a gap, the first
    missing one)."""

    def __init__(self, message: str, *, check: str, index: int) -> None:
        if check not in CHECKS:
            raise ValueError(f"unknown check {check!r} (known: {', '.join(CHECKS)})")
        super().__init__(message)
        self.check = check
        self.index = index


@dataclass(frozen=True, slots=True)
class SignedFields:
    """The fields of an entry's signed bytes that the store keeps copies of."""

    version: int
    index: int
    client: str
    request_id: str
    kind: str
    table_id: str
    round_id: str
    session_id: str
    time: str
    slot: str | None
    table_seq: int | None
    table_prev: int | None
    table_map: bytes | None = None
    """Format 3's root of the table map after the entry (None before format 3)."""


_STRINGS = ("client", "request_id", "kind", "table_id", "round_id", "session_id", "time")


def signed_fields(data: bytes, *, index: int) -> SignedFields:
    """The looked-up fields of entry bytes (format 1, 2 or 3) and format 3's ``table_map``;
    ``index`` is the row's, for the message. Raises :class:`LookupIntegrityError`
    (``entry``) if the bytes are no entry."""

    def bad(why: str) -> LookupIntegrityError:
        return LookupIntegrityError(
            f"entry {index}: its stored bytes are not a log entry ({why}); they hash to its "
            f"leaf, so the log signed them: report this",
            check="entry",
            index=index,
        )

    try:
        record: Any = json.loads(data)
    except (UnicodeDecodeError, ValueError) as e:
        raise bad(f"not JSON: {e}") from e
    if type(record) is not dict:
        raise bad("not a JSON object")
    version = record.get("v")
    if version not in (1, 2, 3) or type(version) is not int:
        raise bad(f"unknown format version {version!r}")
    if type(record.get("index")) is not int:
        raise bad("no integer index")
    for key in _STRINGS:
        if type(record.get(key)) is not str:
            raise bad(f"field {key!r} is not a string")
    slot = seq = prev = root = None
    if version >= 2:
        slot, seq, prev = record.get("slot"), record.get("table_seq"), record.get("table_prev")
        if type(slot) is not str or type(seq) is not int or not (prev is None or type(prev) is int):
            raise bad("format 2 fields slot, table_seq, table_prev mistyped")
    if version == 3:
        text = record.get("table_map")
        if type(text) is not str or len(text) != 64 or not _HEX.issuperset(text):
            raise bad("format 3 field table_map is not 64 lowercase hex characters")
        root = bytes.fromhex(text)
    return SignedFields(
        version=version,
        index=record["index"],
        client=record["client"],
        request_id=record["request_id"],
        kind=record["kind"],
        table_id=record["table_id"],
        round_id=record["round_id"],
        session_id=record["session_id"],
        time=record["time"],
        slot=slot,
        table_seq=seq,
        table_prev=prev,
        table_map=root,
    )


_HEX = frozenset("0123456789abcdef")


def check_record(record: EntryRecord) -> SignedFields:
    """Checks one stored row against its signed bytes (see the module docstring) and returns
    the signed fields; raises :class:`LookupIntegrityError` naming every column that differs."""
    index = record.index
    computed = hashlib.sha256(LEAF_PREFIX + record.data).digest()
    if computed != record.leaf_hash:
        raise LookupIntegrityError(
            f"entry {index}: its bytes hash to {computed.hex()}, but its stored leaf hash is "
            f"{record.leaf_hash.hex()}: the entry's bytes (or its leaf hash) were changed in "
            f"the store",
            check="leaf_hash",
            index=index,
        )
    signed = signed_fields(record.data, index=index)
    differ: list[tuple[str, object, object]] = []
    for column, stored, value in (
        ("index", index, signed.index),
        ("client_id", record.client_id, signed.client),
        ("request_id", record.request_id, signed.request_id),
        ("kind", record.kind, signed.kind),
        ("table_id", record.table_id, signed.table_id),
        ("round_id", record.round_id, signed.round_id),
        ("session_id", record.session_id, signed.session_id),
        ("slot", record.slot, signed.slot),
        ("table_seq", record.table_seq, signed.table_seq),
    ):
        if stored != value:
            differ.append((column, stored, value))
    if _time_text(record.timestamp_ns) != signed.time:
        differ.append(("timestamp_ns", record.timestamp_ns, signed.time))
    if differ:
        stored_text = ", ".join(f"{c} {s!r}" for c, s, _ in differ)
        signed_text = ", ".join(f"{c} {v!r}" for c, _, v in differ)
        raise LookupIntegrityError(
            f"entry {index}: the store's lookup columns say {stored_text}, but the entry's "
            f"signed bytes say {signed_text}: the row's columns were changed in the store, so "
            f"lookups by them select the wrong entries",
            check="columns",
            index=index,
        )
    return signed


def check_nodes(records: Sequence[EntryRecord], nodes: Sequence[bytes]) -> None:
    """Each record's leaf hash against ``nodes``, the tree's stored level-0 nodes of the
    records' indexes (in order). Call it after :func:`check_record`, which proves that the
    bytes hash to the leaf-hash column: then a row that passes both serves the bytes the
    tree, hence every checkpoint of it, commits to. Raises :class:`LookupIntegrityError`
    (``node``) at the first row that differs."""
    if len(nodes) != len(records):
        raise ValueError(f"{len(records)} records but {len(nodes)} leaf nodes")
    for record, node in zip(records, nodes, strict=True):
        if record.leaf_hash != node:
            raise LookupIntegrityError(
                f"entry {record.index}: its bytes hash to {record.leaf_hash.hex()}, as its "
                f"stored leaf hash says, but the tree's leaf node (level 0, index "
                f"{record.index}), which the signed checkpoints commit to, is {node.hex()}: "
                f"the entry's bytes were changed in the store together with its leaf hash",
                check="node",
                index=record.index,
            )


_last_second: tuple[int, str] = (-1, "")


def _time_text(timestamp_ns: int) -> str:
    """``format_time(timestamp_ns)``, reusing the date and time of day of the previous call's
    second (entries read in order mostly share it; formatting a date costs more than the rest
    of a row's check)."""
    global _last_second
    if type(timestamp_ns) is not int:
        return f"{timestamp_ns!r} (not a time)"
    seconds, ns = divmod(timestamp_ns, 10**9)
    second, text = _last_second
    if seconds != second:
        try:
            text = format_time(seconds * 10**9)[:-8]  # without ".000000Z"
        except (OverflowError, OSError, ValueError):
            return f"{timestamp_ns} ns (not a time)"
        _last_second = (seconds, text)
    return f"{text}.{ns // 1000:06d}Z"


def check_range(records: Sequence[EntryRecord], start: int, end: int) -> None:
    """Raises :class:`LookupIntegrityError` (``gap``) unless ``records`` are exactly the
    indexes ``[start, end)`` in order: a row read by its index range was deleted."""
    for offset, record in enumerate(records):
        expected = start + offset
        if record.index != expected:
            raise LookupIntegrityError(
                f"entry {expected} is missing from the log store (the next stored entry is "
                f"{record.index}), though the tree covers it: a row was deleted",
                check="gap",
                index=expected,
            )
    if len(records) < end - start:
        missing = start + len(records)
        raise LookupIntegrityError(
            f"entry {missing} is missing from the log store (it holds no entry in "
            f"[{missing}, {end})), though the tree covers it: rows were deleted",
            check="gap",
            index=missing,
        )


def check_chain(
    rows: Sequence[tuple[EntryRecord, SignedFields]],
    *,
    client_id: str,
    table_id: str,
    first_seq: int,
) -> None:
    """Rows read as the (client_id, table_id) chain from ``first_seq``: each of that client
    and table (signed), numbered ``first_seq``, ``first_seq + 1``, ... without a gap, each
    naming the row before it as its ``table_prev``. Raises :class:`LookupIntegrityError`
    (``chain``) at the first break: a row was deleted, or its columns were changed so that the
    chain's lookup no longer selects it."""
    previous: tuple[int, int] | None = None  # (index, table_seq) of the row before
    expected = first_seq
    for record, signed in rows:
        where = f"table {table_id!r} of client {client_id!r}"
        if (signed.client, signed.table_id) != (client_id, table_id):
            raise LookupIntegrityError(
                f"entry {record.index} was read as part of the chain of {where}, but its signed "
                f"bytes are of table {signed.table_id!r} of client {signed.client!r}",
                check="chain",
                index=record.index,
            )
        seq = signed.table_seq
        if seq != expected or (previous is not None and signed.table_prev != previous[0]):
            if previous is None:
                after = f"the chain's lookup from seq {first_seq} starts at"
            else:
                after = f"after seq {previous[1]} (entry {previous[0]}) the store gives"
            names = (
                ""
                if signed.table_prev is None
                else f", whose signed predecessor is entry {signed.table_prev}"
            )
            raise LookupIntegrityError(
                f"the chain of {where} is broken in the store: {after} seq {seq} (entry "
                f"{record.index}{names}), expected seq {expected}: an entry of the chain was "
                f"deleted, or its lookup columns were changed",
                check="chain",
                index=record.index if signed.table_prev is None else signed.table_prev,
            )
        previous = (record.index, seq)
        expected = seq + 1
