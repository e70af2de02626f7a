"""The log storage contract: record types, the :class:`LogStorage` Protocol and its errors.

Owns what every driver (``memory``, ``sqlite``, later ``postgres``) must do; see
``docs/architecture.md`` ("Storage contract"). Storage keeps opaque, already canonical entry
bytes plus the keys they are looked up by, the complete-subtree Merkle nodes (RFC 6962
section 2.1; node ``(level, index)`` covers leaves ``[index * 2**level, (index + 1) * 2**level)``,
level 0 being the leaf hash) and the signed checkpoint notes (C2SP tlog-checkpoint). It never
interprets those bytes and imports nothing from ``rng_service.log``, so that log -> storage
stays one-way.

Conventions shared by all drivers:

- ``sequence(build)`` is the write path of the log's sequencer: it takes the store's writers'
  lock (shared by every process writing the store: several service replicas on one PostgreSQL
  log are serialised here), reads the stored tree size, calls ``build(size)`` and stores the
  :class:`AppendBatch` it returns in the same transaction, or nothing if it returns None. An
  exception from ``build`` rolls back and propagates. ``build`` may read the store through
  the read methods meanwhile (they see every committed append, never the one in progress) and
  may be called more than once (a driver retries a transaction that failed before it could
  commit): only the result of its last call is stored.
- ``append`` is ``sequence`` of a ready batch: one atomic, durable transaction: either every
  entry, node and the checkpoint is stored, or nothing is. Entries must continue the log
  without gaps (``entries[i].index == tree_size() + i``), else :class:`SequenceConflict`; a
  ``(client_id, request_id)`` already stored, or repeated in the batch, raises
  :class:`DuplicateRequest`; a node coordinate already stored raises :class:`SequenceConflict`;
  an I/O or commit failure raises :class:`~rng_service.errors.StorageUnavailable`.
- A driver that talks to its store over a connection (PostgreSQL) says when it lost it:
  :class:`StoreConnectionLost` (the store could not be reached, or the connection broke;
  nothing of the failed call was stored), and :class:`CommitUnknown` when it broke while a
  COMMIT was on its way (the write may or may not be stored: only reading the store again
  tells). Both are :class:`~rng_service.errors.StorageUnavailable`, so a caller that does not
  care which sees no difference; the sequencer uses them to resolve a commit after a failover
  (``rng_service.writer.appender``). SQLite and the in-memory store raise neither.
- Such a driver may also reconnect by itself, and a call may then succeed on another server
  than the one before (a promoted standby, or the same server after a restart): it says so
  through :class:`ServerEpochs` (``server_epoch`` changes), so that the sequencer checks that
  the store still holds the tree it has seen before it appends to it.
- ``entries(start, end)`` is half-open and returns the stored part of ``[start, end)``.
- Time filters are half-open: ``since_ns <= timestamp_ns < until_ns``; size filters inclusive.
- Results are ordered by entry index, and checkpoints by (size, timestamp, insertion).
- The meta key ``schema_version`` is reserved for the driver.
- Every appended entry has a ``slot`` and a ``table_seq`` (lookup keys the sequencer uses
  for a round's slots and a table's chain; entry format 2). Entries stored by schema 1,
  before those columns existed, have neither (None). ``(client_id, table_id, round_id, slot)``
  and ``(client_id, table_id, table_seq)`` are unique: a batch repeating one, or repeating a
  stored one, raises :class:`SequenceConflict` (the sequencer checks first; the constraint is a
  second line of defence).
- Witness cosignatures (C2SP tlog-cosignature lines, opaque here) are kept beside the published
  checkpoints, one per (tree size, checkpoint body hash, witness key): ``add_cosignatures``
  keeps the newer of two by the cosignature's own timestamp, so a quiet log asking its
  witnesses again at every interval replaces each witness's line instead of piling them up.
- The table map's rows (:class:`MapRow`, table ``table_map``): one per (client_id, table_id)
  chain, its head (the log index and ``table_seq`` of its newest entry), plain values the log
  layer computes (docs/log-format.md, "Table map"). An :class:`AppendBatch` carries the heads
  its entries move and they are upserted in the append's transaction, so the rows are always
  the heads of the stored log. ``map_rows`` reads them all; ``map_heads_at(N)`` gives the heads
  as of tree size ``N`` (rows with ``head_index < N``; for the others, the chain's newest entry
  below ``N`` by the entries' columns), which the log layer checks against the root signed in
  entry ``N - 1`` before relying on it. Schema migration builds the first rows from the stored
  entries' columns (``rng-service migrate-store``); the writer checks them against the signed
  bytes before the first root commits them.
- Lookups (``find_entries``, ``table_history``, ``entry_by_request``, ...) select rows by their
  stored columns. Whoever can write the database can change a column without touching the
  entry's signed bytes, so the readers above compare the two (``rng_service.writer.columns``)
  and the store's own check compares them for every entry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from rng_service.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    StorageUnavailable,
)

__all__ = [
    "RESERVED_META_KEYS",
    "AppendBatch",
    "CheckpointRecord",
    "CommitUnknown",
    "CosignatureRecord",
    "DuplicateRequest",
    "EntryRecord",
    "GroupState",
    "LogStorage",
    "MapRow",
    "NodeRecord",
    "SchemaVersionMismatch",
    "SequenceConflict",
    "ServerEpochs",
    "SlotRecord",
    "StorageUnavailable",
    "StoreConnectionLost",
    "TableHead",
    "check_append_batch",
    "check_entry_range",
    "check_limit",
    "check_map_rows",
    "check_meta_key",
    "checkpoint_from_row",
    "cosignature_from_row",
    "entry_from_row",
    "entry_to_row",
    "first_per_witness",
    "newest_cosignatures",
]

RESERVED_META_KEYS = frozenset({"schema_version"})


@dataclass(frozen=True, slots=True)
class EntryRecord:
    """One log entry: its canonical bytes ``data``, ``leaf_hash`` and its lookup keys."""

    index: int
    data: bytes
    leaf_hash: bytes
    client_id: str
    request_id: str
    request_digest: bytes
    kind: str
    table_id: str
    round_id: str
    session_id: str
    timestamp_ns: int
    commit_size: int
    """Tree size after the commit that stored this entry (the receipt's tree size); opaque."""
    slot: str | None = None
    """The round's slot the entry fills (required to append; None for schema-1 rows)."""
    table_seq: int | None = None
    """The entry's number in its (client_id, table_id) chain, from 1 (required to append;
    None for schema-1 rows)."""


@dataclass(frozen=True, slots=True)
class SlotRecord:
    """A stored entry's place in its round (:meth:`LogStorage.round_slots`): no entry bytes."""

    client_id: str
    table_id: str
    round_id: str
    index: int
    slot: str | None
    """None for an entry stored by schema 1."""


@dataclass(frozen=True, slots=True)
class TableHead:
    """The last entry of a (client_id, table_id) chain: its log index and ``table_seq``."""

    index: int
    table_seq: int


@dataclass(frozen=True, slots=True)
class MapRow:
    """A row of the table map: the head of the (client_id, table_id) chain, its newest entry's
    log index and ``table_seq`` (plain values; the map's hashing is the log layer's)."""

    client_id: str
    table_id: str
    head_index: int
    head_seq: int


@dataclass(frozen=True, slots=True)
class GroupState:
    """What :meth:`LogStorage.group_state` finds for a commit group: the stored entries of its
    (client_id, request_id)s, :meth:`LogStorage.round_slots` of its rounds and
    :meth:`LogStorage.table_heads` of its tables."""

    logged: dict[tuple[str, str], EntryRecord]
    slots: list[SlotRecord]
    heads: dict[tuple[str, str], TableHead]


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """Merkle node of a complete subtree: level 0 = leaf hash."""

    level: int
    index: int
    hash: bytes


@dataclass(frozen=True, slots=True)
class CheckpointRecord:
    """A signed checkpoint note for tree ``size``, made at ``timestamp_ns``."""

    size: int
    timestamp_ns: int
    note: bytes


@dataclass(frozen=True, slots=True)
class CosignatureRecord:
    """A witness's cosignature line of the checkpoint whose note text hashes to
    ``body_sha256``, at tree ``size``: the witness's key name and key ID, the cosignature's own
    timestamp (POSIX seconds) and when the service received it. ``line`` is opaque."""

    size: int
    body_sha256: bytes
    witness: str
    key_id: int
    timestamp: int
    line: bytes
    received_ns: int


@dataclass(frozen=True, slots=True)
class AppendBatch:
    """What one append stores in one transaction: entries, their new Merkle nodes,
    optionally a checkpoint to publish, and the table map's rows the entries move (upserted:
    one per chain, its new head)."""

    entries: Sequence[EntryRecord]
    nodes: Sequence[NodeRecord]
    checkpoint: CheckpointRecord | None = None
    heads: Sequence[MapRow] = ()


class SequenceConflict(FailedPrecondition):
    """The batch does not continue the stored log (another writer, or a stale tree)."""


class DuplicateRequest(AlreadyExists):
    """``(client_id, request_id)`` is already in the log; nothing of the batch was stored."""

    def __init__(self, client_id: str, request_id: str) -> None:
        self.client_id = client_id
        self.request_id = request_id
        super().__init__(f"request {request_id!r} of client {client_id!r} is already logged")


class SchemaVersionMismatch(FailedPrecondition):
    """The database was written with another schema version; it is not opened."""


class StoreConnectionLost(StorageUnavailable):
    """The store could not be reached, or the connection to it broke before a COMMIT was
    sent: nothing of the failed call was stored. Until the store is reached again nothing is
    known of its state (it may be another server: a promoted standby)."""


class CommitUnknown(StoreConnectionLost):
    """The connection broke while a write's COMMIT was on its way: the write may or may not
    be stored. Only reading the store again (once it can be reached) tells which."""


@runtime_checkable
class ServerEpochs(Protocol):
    """A store reached over connections that the driver replaces by itself (PostgreSQL)."""

    @property
    def server_epoch(self) -> int:
        """Changes whenever a new connection reaches another server, or another start of the
        same one, than the connection made before it: what the store holds may have changed
        without any call failing (a standby promoted while the caller was idle). A store
        whose server never changes under it (SQLite, memory) does not have this."""
        ...


@runtime_checkable
class LogStorage(Protocol):
    """What the log needs from a store. All methods may be called from any thread and, for
    the drivers that say so, from several processes (see the module docstring)."""

    def tree_size(self) -> int: ...

    def sequence(self, build: Callable[[int], AppendBatch | None]) -> None:
        """Stores ``build(stored tree size)`` in one transaction under the writers' lock."""
        ...

    def append(
        self,
        entries: Sequence[EntryRecord],
        nodes: Sequence[NodeRecord],
        checkpoint: CheckpointRecord | None = None,
    ) -> None: ...

    def entries(self, start: int, end: int) -> list[EntryRecord]: ...

    def entries_by_requests(
        self, client_id: str, request_ids: Sequence[str]
    ) -> dict[str, EntryRecord]:
        """The stored entries of ``client_id`` among ``request_ids``, by request id (one query)."""
        ...

    def entry_by_request(self, client_id: str, request_id: str) -> EntryRecord | None: ...

    def round_slots(self, rounds: Sequence[tuple[str, str, str]]) -> list[SlotRecord]:
        """Every stored entry of the given (client_id, table_id, round_id) rounds, as its index
        and slot, ordered by index (one query, from an index of the store: no entry bytes)."""
        ...

    def table_heads(self, tables: Sequence[tuple[str, str]]) -> dict[tuple[str, str], TableHead]:
        """For each (client_id, table_id) of ``tables`` with a chain, its last entry (highest
        ``table_seq``); tables without one are left out (one query)."""
        ...

    def group_state(
        self,
        requests: Sequence[tuple[str, str]],
        rounds: Sequence[tuple[str, str, str]],
        tables: Sequence[tuple[str, str]],
    ) -> GroupState:
        """The sequencer's lookup for a commit group in ONE query (each query the writer makes
        under the writers' lock costs every group: a statement and its GIL hand-off in SQLite,
        a round trip in PostgreSQL): the stored entries of the (client_id, request_id)s of
        ``requests`` (as :meth:`entries_by_requests`), ``round_slots(rounds)`` and
        ``table_heads(tables)``."""
        ...

    def entry_by_leaf_hash(self, leaf_hash: bytes) -> EntryRecord | None: ...

    def find_entries(
        self,
        *,
        client_id: str | None = None,
        table_id: str | None = None,
        round_id: str | None = None,
        session_id: str | None = None,
        request_id: str | None = None,
        since_ns: int | None = None,
        until_ns: int | None = None,
        limit: int = 1000,
    ) -> list[EntryRecord]:
        """The entries whose columns match every given filter, by index, at most ``limit``.
        Selected by the stored columns, not by the entry bytes: the caller checks the two
        against each other (``rng_service.writer.columns``)."""
        ...

    def table_history(
        self,
        client_id: str,
        table_id: str,
        *,
        first_seq: int = 1,
        last_seq: int | None = None,
        limit: int = 1000,
    ) -> list[EntryRecord]:
        """The entries of the (client_id, table_id) chain whose ``table_seq`` column is in
        ``[first_seq, last_seq]`` (None: no upper bound), ordered by ``table_seq``, at most
        ``limit`` (a range of the ``(client_id, table_id, table_seq)`` index). Rows without a
        ``table_seq`` (schema 1) are in no chain."""
        ...

    def nodes(self, coords: Iterable[tuple[int, int]]) -> dict[tuple[int, int], bytes]: ...

    def map_rows(self) -> list[MapRow]:
        """Every row of the table map (the heads of the stored log), by (client_id,
        table_id)."""
        ...

    def map_heads_at(self, size: int) -> list[MapRow]:
        """The table map's heads as of tree size ``size``: the rows whose ``head_index`` is
        below ``size`` as stored, and for each other row the newest entry below ``size`` of
        its chain by the entries' columns (highest ``table_seq``), or nothing if the chain
        had no entry then; by (client_id, table_id) (one query). Unsigned: the caller checks
        the map they give against the root signed in entry ``size - 1``."""
        ...

    def add_checkpoint(self, checkpoint: CheckpointRecord) -> None: ...

    def latest_checkpoint(self) -> CheckpointRecord | None: ...

    def checkpoints(
        self,
        *,
        min_size: int | None = None,
        max_size: int | None = None,
        since_ns: int | None = None,
        until_ns: int | None = None,
    ) -> list[CheckpointRecord]: ...

    def get_meta(self, key: str) -> bytes | None: ...

    def set_meta(self, key: str, value: bytes) -> None: ...

    def add_cosignatures(self, records: Sequence[CosignatureRecord]) -> None:
        """Stores witness cosignatures in one transaction; of two for the same (size,
        body_sha256, witness, key_id) the one with the newer ``timestamp`` is kept."""
        ...

    def cosignatures(
        self, *, min_size: int | None = None, max_size: int | None = None
    ) -> list[CosignatureRecord]:
        """Stored cosignatures with ``min_size <= size <= max_size``, by (size, witness,
        key_id)."""
        ...

    def latest_cosignatures(self) -> list[CosignatureRecord]:
        """For each (witness, key_id): its cosignature of the largest size (the newest of
        that size), by (witness, key_id)."""
        ...

    def close(self) -> None: ...


# -- Checks shared by the drivers, so that every driver rejects the same inputs the same way --


def entry_from_row(row: Sequence[Any]) -> EntryRecord:
    """An :class:`EntryRecord` from the SQL drivers' entry columns, in the schema's order:
    idx, data, leaf_hash, client_id, request_id, request_digest, kind, table_id, round_id,
    session_id, timestamp_ns, commit_size, slot, table_seq."""
    return EntryRecord(
        index=row[0],
        data=bytes(row[1]),
        leaf_hash=bytes(row[2]),
        client_id=row[3],
        request_id=row[4],
        request_digest=bytes(row[5]),
        kind=row[6],
        table_id=row[7],
        round_id=row[8],
        session_id=row[9],
        timestamp_ns=row[10],
        commit_size=row[11],
        slot=row[12],
        table_seq=row[13],
    )


def entry_to_row(e: EntryRecord) -> tuple[Any, ...]:
    """The SQL drivers' entry columns of ``e``, in the order :func:`entry_from_row` reads."""
    return (
        e.index, e.data, e.leaf_hash, e.client_id, e.request_id, e.request_digest, e.kind,
        e.table_id, e.round_id, e.session_id, e.timestamp_ns, e.commit_size, e.slot, e.table_seq,
    )  # fmt: skip


def checkpoint_from_row(row: Sequence[Any]) -> CheckpointRecord:
    """A :class:`CheckpointRecord` from (size, timestamp_ns, note) columns."""
    return CheckpointRecord(size=row[0], timestamp_ns=row[1], note=bytes(row[2]))


def cosignature_from_row(row: Sequence[Any]) -> CosignatureRecord:
    """A :class:`CosignatureRecord` from (size, body_sha256, witness, key_id, timestamp, line,
    received_ns) columns."""
    return CosignatureRecord(
        size=row[0], body_sha256=bytes(row[1]), witness=row[2], key_id=row[3],
        timestamp=row[4], line=bytes(row[5]), received_ns=row[6],
    )  # fmt: skip


def newest_cosignatures(records: Iterable[CosignatureRecord]) -> list[CosignatureRecord]:
    """Of several records for the same (size, body_sha256, witness, key_id), the newest by
    timestamp (then by arrival), in the order they keep."""
    best: dict[tuple[int, bytes, str, int], CosignatureRecord] = {}
    for r in records:
        key = (r.size, r.body_sha256, r.witness, r.key_id)
        old = best.get(key)
        if old is None or (r.timestamp, r.received_ns) > (old.timestamp, old.received_ns):
            best[key] = r
    return list(best.values())


def first_per_witness(records: Iterable[CosignatureRecord]) -> list[CosignatureRecord]:
    """The first record of each (witness, key_id), in the order given."""
    seen: set[tuple[str, int]] = set()
    out: list[CosignatureRecord] = []
    for record in records:
        if (record.witness, record.key_id) not in seen:
            seen.add((record.witness, record.key_id))
            out.append(record)
    return out


def check_map_rows(size: int, heads: Sequence[MapRow]) -> None:
    """Raises :class:`SequenceConflict` unless each head row of a batch that leaves the log at
    ``size`` entries names an entry below ``size`` with a ``head_seq`` from 1, one per chain."""
    seen: set[tuple[str, str]] = set()
    for row in heads:
        key = (row.client_id, row.table_id)
        if key in seen:
            raise SequenceConflict(f"the batch moves the table map's head of {key} twice")
        seen.add(key)
        if not (0 <= row.head_index < size) or row.head_seq < 1:
            raise SequenceConflict(
                f"the batch's table map head of {key} is entry {row.head_index}, seq "
                f"{row.head_seq}: not an entry of a log of {size} entries, or not a table_seq"
            )


def check_append_batch(
    size: int, entries: Sequence[EntryRecord], heads: Sequence[MapRow] = ()
) -> None:
    """Raises :class:`SequenceConflict` unless ``entries`` continue a log of ``size`` entries
    without gaps, each with a slot and a table sequence number, none repeating another's slot
    or table sequence number, and ``heads`` pass :func:`check_map_rows`;
    :class:`DuplicateRequest` if a request repeats inside the batch."""
    check_map_rows(size + len(entries), heads)
    seen: set[tuple[str, str]] = set()
    slots: set[tuple[str, str, str, str]] = set()
    seqs: set[tuple[str, str, int]] = set()
    for offset, entry in enumerate(entries):
        if entry.index != size + offset:
            raise SequenceConflict(
                f"entry at batch position {offset} has index {entry.index}, expected "
                f"{size + offset} (stored tree size {size})"
            )
        key = (entry.client_id, entry.request_id)
        if key in seen:
            raise DuplicateRequest(*key)
        seen.add(key)
        if entry.slot is None or entry.table_seq is None:
            raise SequenceConflict(
                f"entry {entry.index} has no slot or table_seq (every new entry has both)"
            )
        slot = (entry.client_id, entry.table_id, entry.round_id, entry.slot)
        seq = (entry.client_id, entry.table_id, entry.table_seq)
        if slot in slots:
            raise SequenceConflict(f"entry {entry.index} repeats the batch's slot {slot}")
        if seq in seqs:
            raise SequenceConflict(f"entry {entry.index} repeats the batch's table_seq {seq}")
        slots.add(slot)
        seqs.add(seq)


def check_entry_range(start: int, end: int) -> None:
    if start < 0 or end < start:
        raise InvalidArgument(
            "range", f"[{start}, {end}) is not a range", allowed="0 <= start <= end"
        )


def check_limit(limit: int) -> None:
    if limit < 1:
        raise InvalidArgument("limit", f"{limit} is not positive", allowed=">= 1")


def check_meta_key(key: str) -> None:
    if key in RESERVED_META_KEYS:
        raise InvalidArgument("key", f"{key!r} is reserved for the storage driver")
