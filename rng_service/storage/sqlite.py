"""SQLite driver of :class:`~rng_service.storage.base.LogStorage`.

Owns the SQLite schema (version :data:`SCHEMA_VERSION`, kept in the ``meta`` table) and the
durability settings: WAL journal with ``synchronous=FULL``, so that a returned ``append`` has
been fsynced. One writer connection is used under a lock (``append``, ``add_checkpoint``,
``set_meta``); reads take a connection from a small pool of read-only connections, one per
concurrent reader (WAL readers never block the writer and see only committed transactions).
``sequence`` (and ``append``, a ready batch) is one ``BEGIN IMMEDIATE`` transaction with
``executemany`` per table; any failure rolls it back, so a batch is stored whole or not at all.
SQLite's write lock serialises writers across processes too, so several processes may append to
one file (on one machine; the service runs one per file, see docs/operations/running.md). A database
written with a newer schema version is refused; an older one is migrated (:data:`MIGRATIONS`,
in one transaction) only when opened with ``migrate=True`` (``rng-service migrate-store``),
never silently.

Entry bytes and node hashes are opaque here (RFC 6962 section 2.1 nodes, C2SP tlog-checkpoint
notes are interpreted by ``rng_service.log`` only).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from rng_service.errors import InvalidArgument, StorageUnavailable
from rng_service.storage._sql import (
    CHECKPOINT_ORDER,
    GROUP_LOGGED,
    GROUP_LOGGED_ON,
    GROUP_ROUND_SLOTS,
    GROUP_ROUND_SLOTS_ON,
    GROUP_TABLE_HEAD,
    GROUP_TABLE_HEAD_WHERE,
    checkpoint_conditions,
    entry_conditions,
    group_state_from_rows,
    map_rows_from,
    statements,
)
from rng_service.storage.base import (
    AppendBatch,
    CheckpointRecord,
    CosignatureRecord,
    DuplicateRequest,
    EntryRecord,
    GroupState,
    MapRow,
    NodeRecord,
    SchemaVersionMismatch,
    SequenceConflict,
    SlotRecord,
    TableHead,
    check_append_batch,
    check_entry_range,
    check_limit,
    check_meta_key,
    checkpoint_from_row,
    cosignature_from_row,
    entry_from_row,
    entry_to_row,
    first_per_witness,
)

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SqliteStorage"]

_SCHEMA_1 = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value BLOB NOT NULL
);
CREATE TABLE entries (
    idx            INTEGER PRIMARY KEY,
    data           BLOB    NOT NULL,
    leaf_hash      BLOB    NOT NULL,
    client_id      TEXT    NOT NULL,
    request_id     TEXT    NOT NULL,
    request_digest BLOB    NOT NULL,
    kind           TEXT    NOT NULL,
    table_id       TEXT    NOT NULL,
    round_id       TEXT    NOT NULL,
    session_id     TEXT    NOT NULL,
    timestamp_ns   INTEGER NOT NULL,
    commit_size    INTEGER NOT NULL
);
CREATE UNIQUE INDEX entries_request ON entries (client_id, request_id);
CREATE INDEX entries_leaf_hash ON entries (leaf_hash);
CREATE INDEX entries_table ON entries (table_id);
CREATE INDEX entries_round ON entries (round_id);
CREATE INDEX entries_session ON entries (session_id);
CREATE INDEX entries_timestamp ON entries (timestamp_ns);
CREATE TABLE nodes (
    level INTEGER NOT NULL,
    idx   INTEGER NOT NULL,
    hash  BLOB    NOT NULL,
    PRIMARY KEY (level, idx)
) WITHOUT ROWID;
CREATE TABLE checkpoints (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    size         INTEGER NOT NULL,
    timestamp_ns INTEGER NOT NULL,
    note         BLOB    NOT NULL
);
CREATE INDEX checkpoints_size ON checkpoints (size, timestamp_ns);
CREATE INDEX checkpoints_timestamp ON checkpoints (timestamp_ns);
"""

# Schema 2 (entry format 2): each entry's round slot and table sequence number, unique per
# round and per table (the indexes also serve round_slots and table_heads); rows of schema 1
# keep NULL in both.
_SCHEMA_2 = """
ALTER TABLE entries ADD COLUMN slot TEXT;
ALTER TABLE entries ADD COLUMN table_seq INTEGER;
CREATE UNIQUE INDEX entries_slot ON entries (client_id, table_id, round_id, slot);
CREATE UNIQUE INDEX entries_table_seq ON entries (client_id, table_id, table_seq);
"""

# Schema 3: witness cosignatures of published checkpoints (C2SP tlog-cosignature lines, opaque
# here), one per (tree size, checkpoint body hash, witness key); witness/key_id/size serves
# latest_cosignatures.
_SCHEMA_3 = """
CREATE TABLE cosignatures (
    size        INTEGER NOT NULL,
    body_sha256 BLOB    NOT NULL,
    witness     TEXT    NOT NULL,
    key_id      INTEGER NOT NULL,
    cosigned_at INTEGER NOT NULL,
    line        BLOB    NOT NULL,
    received_ns INTEGER NOT NULL,
    PRIMARY KEY (size, body_sha256, witness, key_id)
);
CREATE INDEX cosignatures_witness ON cosignatures (witness, key_id, size);
"""

# Schema 4 (entry format 3): the table map's rows, the head (index, table_seq) of each
# (client_id, table_id) chain. The first rows come from the stored chains' columns (entries of
# schema 1 are in no chain); the writer checks them against the entries' signed bytes before
# the first format 3 entry commits their root (docs/log-format.md, "Table map").
_SCHEMA_4 = """
CREATE TABLE table_map (
    client_id  TEXT    NOT NULL,
    table_id   TEXT    NOT NULL,
    head_index INTEGER NOT NULL,
    head_seq   INTEGER NOT NULL,
    PRIMARY KEY (client_id, table_id)
) WITHOUT ROWID;
CREATE INDEX table_map_head_index ON table_map (head_index);
INSERT INTO table_map (client_id, table_id, head_index, head_seq)
    SELECT e.client_id, e.table_id, e.idx, e.table_seq FROM entries AS e
    WHERE e.table_seq IS NOT NULL AND e.table_seq = (
        SELECT MAX(x.table_seq) FROM entries AS x
        WHERE x.client_id = e.client_id AND x.table_id = e.table_id)
"""

#: Every schema step, oldest first (version -> statements); a new version is a new entry here.
MIGRATIONS: dict[int, str] = {1: _SCHEMA_1, 2: _SCHEMA_2, 3: _SCHEMA_3, 4: _SCHEMA_4}

SCHEMA_VERSION = max(MIGRATIONS)
"""Version of the schema this build reads and writes; an older database is migrated only when
opened with ``migrate=True`` (``rng-service migrate-store``), a newer one is refused."""

# Binding a ``bytes`` parameter (entry bytes, leaf hashes, digests, node hashes: about five a
# logged outcome) makes the sqlite3 module look for an adapter (``bytes`` is not among the types
# it binds without one). With none registered it asks its PrepareProtocol type for
# ``__adapt__``, which formats, raises and clears an AttributeError each time: about a third of
# the writer's cost of binding a row (docs/performance.md). An adapter registered for exact
# ``bytes`` that returns the object itself (``bytes.__bytes__`` of a ``bytes`` is that object)
# binds the very same blob without it. The registry is the sqlite3 module's, process-wide;
# this entry changes no value any connection binds.
sqlite3.register_adapter(bytes, bytes.__bytes__)

# Queries are literals; the only composed SQL (filters in find_entries/checkpoints, the IN
# list in nodes) is built from fixed fragments, never from caller text (hence the S608 noqa).
_SQL = statements("?")
# group_state's parts (the row shape is in rng_service.storage._sql). CROSS JOIN keeps the keys
# the outer loop: one probe of entries_request per request, of the covering index entries_slot
# per round (no entry bytes; an IN list of row values would scan the table), and one backward
# probe of entries_table_seq per table (its highest table_seq).
_LOGGED = f"SELECT {GROUP_LOGGED}, NULL FROM q CROSS JOIN entries AS e ON {GROUP_LOGGED_ON}"  # noqa: S608
_ROUND_SLOTS = (
    f"SELECT {GROUP_ROUND_SLOTS} FROM k CROSS JOIN entries AS e ON {GROUP_ROUND_SLOTS_ON}"  # noqa: S608
)
_TABLE_HEADS = (
    f"SELECT {GROUP_TABLE_HEAD} FROM h CROSS JOIN entries AS e "  # noqa: S608
    f"ON e.idx = (SELECT idx FROM entries WHERE {GROUP_TABLE_HEAD_WHERE})"
)
_MAX_VARIABLES = 32766  # SQLite's default SQLITE_MAX_VARIABLE_NUMBER since 3.32
_NODE_BATCH = 400  # coordinates per query: 800 parameters stay under every SQLite limit
_MAX_INT64 = 2**63 - 1
_MAX_IDLE_READERS = 16  # reader connections kept open for reuse; more are opened on demand


def _insert_rows(conn: sqlite3.Connection, insert: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """``insert`` (one ``VALUES (?,...)`` row) for all ``rows``, as few multi-row statements.

    One statement is one ``sqlite3_step``: the module releases and retakes the GIL around every
    step, and under load retaking it means waiting for the event loop's switch interval. A
    group's rows in one statement cost one such hand-off instead of one per row (``executemany``).
    """
    if not rows:
        return
    insert, conflict, action = insert.partition(" ON CONFLICT")  # an upsert keeps its clause
    head, _, one = insert.rpartition("VALUES ")
    per_row = len(rows[0])
    chunk = max(1, _MAX_VARIABLES // per_row)
    for start in range(0, len(rows), chunk):
        part = rows[start : start + chunk]
        conn.execute(
            head + "VALUES " + ",".join([one] * len(part)) + conflict + action,
            [value for row in part for value in row],
        )


class SqliteStorage:
    """A durable log store in one SQLite database file (one writing process at a time)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout_ms: int = 5000,
        read_only: bool = False,
        migrate: bool = False,
    ) -> None:
        """Opens (creating if missing, with its schema) the log database at ``path``.

        ``path``'s directory must exist. ``busy_timeout_ms``: how long a statement waits for
        another connection's lock before the operation fails with StorageUnavailable.
        ``read_only``: open an existing log for reading only (SQLite ``mode=ro``): nothing is
        created or written, every write fails with StorageUnavailable; it may run beside the
        service that writes the file (WAL readers never block the writer).
        ``migrate``: bring a database of an older schema version to :data:`SCHEMA_VERSION`
        (in one transaction) instead of refusing it with SchemaVersionMismatch (not with
        ``read_only``).
        """
        if busy_timeout_ms < 0:
            raise InvalidArgument("busy_timeout_ms", "must not be negative", allowed=">= 0")
        self._busy_timeout_ms = int(busy_timeout_ms)
        self._path = Path(path)
        self._read_only = read_only
        self._write_lock = threading.Lock()
        self._readers_lock = threading.Lock()
        self._idle_readers: list[sqlite3.Connection] = []
        self._closed = False
        self.migrated_from: int | None = None
        """The schema version this open migrated the database from, if it did."""
        self._writer = self._connect()
        try:
            self._init_schema(migrate=migrate)
        except BaseException:
            self._writer.close()
            raise

    def __repr__(self) -> str:
        return f"SqliteStorage(path={str(self._path)!r})"

    # -- connections -----------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        target = f"{self._path.absolute().as_uri()}?mode=ro" if self._read_only else str(self._path)
        try:
            conn = sqlite3.connect(
                target,
                uri=self._read_only,
                isolation_level=None,
                check_same_thread=False,
                timeout=self._busy_timeout_ms / 1000,
            )
        except sqlite3.Error as e:
            raise StorageUnavailable(f"cannot open SQLite log {self._path}: {e}") from e
        try:
            conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
            if self._read_only:
                conn.execute("PRAGMA query_only = ON")
                return conn
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StorageUnavailable(
                    f"SQLite log {self._path} cannot use WAL journal mode (got {mode!r})"
                )
            conn.execute("PRAGMA synchronous = FULL")
        except sqlite3.Error as e:
            conn.close()
            raise StorageUnavailable(f"cannot open SQLite log {self._path}: {e}") from e
        except BaseException:
            conn.close()
            raise
        return conn

    def _check_open(self) -> None:
        if self._closed:
            raise StorageUnavailable(f"SQLite log {self._path} is closed")

    def _acquire_reader(self) -> sqlite3.Connection:
        with self._readers_lock:
            self._check_open()
            if self._idle_readers:
                return self._idle_readers.pop()
        conn = self._connect()
        try:
            conn.execute("PRAGMA query_only = ON")
        except sqlite3.Error as e:
            conn.close()
            raise StorageUnavailable(f"cannot open SQLite log {self._path}: {e}") from e
        return conn

    def _release_reader(self, conn: sqlite3.Connection) -> None:
        with self._readers_lock:
            if self._closed or len(self._idle_readers) >= _MAX_IDLE_READERS:
                conn.close()
            else:
                self._idle_readers.append(conn)

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        conn = self._acquire_reader()
        try:
            rows: list[tuple[Any, ...]] = conn.execute(sql, params).fetchall()
        except sqlite3.Error as e:
            raise StorageUnavailable(f"SQLite log {self._path}: read failed: {e}") from e
        finally:
            self._release_reader(conn)
        return rows

    def _init_schema(self, *, migrate: bool) -> None:
        conn = self._writer
        try:
            conn.execute("BEGIN" if self._read_only else "BEGIN IMMEDIATE")
            try:
                tables = {
                    r[0]
                    for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                }
                if "meta" not in tables:
                    if self._read_only or tables - {"sqlite_sequence"}:
                        raise SchemaVersionMismatch(
                            f"{self._path} is an SQLite database but not an rng-service log "
                            f"(tables {sorted(tables)}, no meta table); refusing to open it"
                        )
                    found = 0
                else:
                    row = conn.execute(
                        "SELECT value FROM meta WHERE key = 'schema_version'"
                    ).fetchone()
                    text = bytes(row[0]).decode(errors="replace") if row else "none"
                    found = int(text) if text.isdigit() else -1
                    if not 1 <= found <= SCHEMA_VERSION:
                        raise SchemaVersionMismatch(
                            f"SQLite log {self._path} has schema version {text}; this build "
                            f"reads version {SCHEMA_VERSION} only. Refusing to open it (use the "
                            f"matching release)"
                        )
                    if found < SCHEMA_VERSION and (self._read_only or not migrate):
                        raise SchemaVersionMismatch(
                            f"SQLite log {self._path} has schema version {found}; this build "
                            f"reads version {SCHEMA_VERSION}. Refusing to open it: back the "
                            "database up, then migrate it once with `rng-service migrate-store "
                            '--config FILE` (docs/operations/backup-and-upgrades.md, "Upgrades")'
                        )
                if found < SCHEMA_VERSION:
                    for version in range(found + 1, SCHEMA_VERSION + 1):
                        # One statement at a time: executescript() would commit the transaction.
                        for statement in MIGRATIONS[version].split(";"):
                            if statement.strip():
                                conn.execute(statement)
                    conn.execute(
                        "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
                        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                        (str(SCHEMA_VERSION).encode(),),
                    )
                    if found > 0:
                        self.migrated_from = found
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as e:
            raise StorageUnavailable(f"cannot open SQLite log {self._path}: {e}") from e

    # -- writes ----------------------------------------------------------------------------

    def sequence(self, build: Callable[[int], AppendBatch | None]) -> None:
        with self._write_lock:
            self._check_open()
            conn = self._writer
            entries: Sequence[EntryRecord] = ()
            try:
                # BEGIN IMMEDIATE takes SQLite's write lock: another process writing the same
                # file waits here (busy_timeout), then sees what this one committed.
                conn.execute("BEGIN IMMEDIATE")
                try:
                    size = conn.execute("SELECT COALESCE(MAX(idx) + 1, 0) FROM entries").fetchone()[
                        0
                    ]
                    batch = build(size)
                    if batch is not None:
                        entries = batch.entries
                        check_append_batch(size, entries, batch.heads)
                        _insert_rows(conn, _SQL.insert_entry, [entry_to_row(e) for e in entries])
                        _insert_rows(
                            conn,
                            _SQL.upsert_map_row,
                            [(h.client_id, h.table_id, h.head_index, h.head_seq)
                             for h in batch.heads],
                        )  # fmt: skip
                        _insert_rows(
                            conn,
                            _SQL.insert_node,
                            [(n.level, n.index, n.hash) for n in batch.nodes],
                        )
                        if batch.checkpoint is not None:
                            cp = batch.checkpoint
                            conn.execute(
                                _SQL.insert_checkpoint, (cp.size, cp.timestamp_ns, cp.note)
                            )
                    conn.execute("COMMIT")
                except BaseException:
                    self._rollback()
                    raise
            except sqlite3.IntegrityError as e:
                raise self._explain_conflict(e, entries) from e
            except sqlite3.Error as e:
                raise StorageUnavailable(
                    f"SQLite log {self._path}: append of {len(entries)} entries failed and was "
                    f"rolled back: {e}"
                ) from e

    def append(
        self,
        entries: Sequence[EntryRecord],
        nodes: Sequence[NodeRecord],
        checkpoint: CheckpointRecord | None = None,
    ) -> None:
        self.sequence(lambda _size: AppendBatch(entries, nodes, checkpoint))

    def _rollback(self) -> None:
        try:
            if self._writer.in_transaction:
                self._writer.execute("ROLLBACK")
        except sqlite3.Error:
            # The original error is what the caller needs; SQLite rolls back an unfinished
            # transaction itself when the connection is next used or closed.
            pass

    def _explain_conflict(
        self, error: sqlite3.IntegrityError, entries: Sequence[EntryRecord]
    ) -> Exception:
        text = str(error)
        if "entries.slot" in text or "entries.table_seq" in text:
            return SequenceConflict(
                f"a slot or table sequence number of the batch is already stored ({text})"
            )
        if "entries.client_id" in text or "entries.request_id" in text:
            for e in entries:
                found = self._writer.execute(
                    "SELECT 1 FROM entries WHERE client_id = ? AND request_id = ?",
                    (e.client_id, e.request_id),
                ).fetchone()
                if found:
                    return DuplicateRequest(e.client_id, e.request_id)
        if "nodes." in text:
            return SequenceConflict(f"a Merkle node of the batch is already stored ({text})")
        if "entries.idx" in text:
            return SequenceConflict(f"an entry index of the batch is already stored ({text})")
        return StorageUnavailable(f"SQLite log {self._path}: append rejected: {text}")

    def _write(self, sql: str, params: Sequence[Any]) -> None:
        with self._write_lock:
            self._check_open()
            try:
                self._writer.execute("BEGIN IMMEDIATE")
                try:
                    self._writer.execute(sql, params)
                    self._writer.execute("COMMIT")
                except BaseException:
                    self._rollback()
                    raise
            except sqlite3.Error as e:
                raise StorageUnavailable(f"SQLite log {self._path}: write failed: {e}") from e

    def add_checkpoint(self, checkpoint: CheckpointRecord) -> None:
        self._write(
            _SQL.insert_checkpoint, (checkpoint.size, checkpoint.timestamp_ns, checkpoint.note)
        )

    def add_cosignatures(self, records: Sequence[CosignatureRecord]) -> None:
        if not records:
            return
        with self._write_lock:
            self._check_open()
            try:
                self._writer.execute("BEGIN IMMEDIATE")
                try:
                    self._writer.executemany(
                        _SQL.insert_cosignature,
                        [(r.size, r.body_sha256, r.witness, r.key_id, r.timestamp, r.line,
                          r.received_ns) for r in records],
                    )  # fmt: skip
                    self._writer.execute("COMMIT")
                except BaseException:
                    self._rollback()
                    raise
            except sqlite3.Error as e:
                raise StorageUnavailable(
                    f"SQLite log {self._path}: storing cosignatures failed: {e}"
                ) from e

    def set_meta(self, key: str, value: bytes) -> None:
        check_meta_key(key)
        self._write(_SQL.set_meta, (key, bytes(value)))

    # -- reads -----------------------------------------------------------------------------

    def tree_size(self) -> int:
        size: int = self._read("SELECT COALESCE(MAX(idx) + 1, 0) FROM entries")[0][0]
        return size

    def entries(self, start: int, end: int) -> list[EntryRecord]:
        check_entry_range(start, end)
        rows = self._read(_SQL.entries_range, (start, end))
        return [entry_from_row(r) for r in rows]

    def entries_by_requests(
        self, client_id: str, request_ids: Sequence[str]
    ) -> dict[str, EntryRecord]:
        found: dict[str, EntryRecord] = {}
        unique = list(dict.fromkeys(request_ids))
        for start in range(0, len(unique), _NODE_BATCH):
            chunk = unique[start : start + _NODE_BATCH]
            marks = ",".join("?" * len(chunk))
            rows = self._read(
                _SQL.select_entries + f"WHERE client_id = ? AND request_id IN ({marks})",
                (client_id, *chunk),
            )
            for row in rows:
                record = entry_from_row(row)
                found[record.request_id] = record
        return found

    def entry_by_request(self, client_id: str, request_id: str) -> EntryRecord | None:
        rows = self._read(_SQL.entry_by_request, (client_id, request_id))
        return entry_from_row(rows[0]) if rows else None

    def round_slots(self, rounds: Sequence[tuple[str, str, str]]) -> list[SlotRecord]:
        return self.group_state((), rounds, ()).slots

    def table_heads(self, tables: Sequence[tuple[str, str]]) -> dict[tuple[str, str], TableHead]:
        return self.group_state((), (), tables).heads

    def group_state(
        self,
        requests: Sequence[tuple[str, str]],
        rounds: Sequence[tuple[str, str, str]],
        tables: Sequence[tuple[str, str]],
    ) -> GroupState:
        """One statement for the three parts: a UNION ALL whose first column says which part
        a row is of."""
        asked = list(dict.fromkeys(requests))
        wanted = list(dict.fromkeys(rounds))
        heads_of = list(dict.fromkeys(tables))
        rows: list[tuple[Any, ...]] = []
        while asked or wanted or heads_of:
            # Each part within SQLite's bound-parameter limit; a large group takes more rounds.
            ids, asked = asked[:_NODE_BATCH], asked[_NODE_BATCH:]
            chunk, wanted = wanted[:_NODE_BATCH], wanted[_NODE_BATCH:]
            pairs, heads_of = heads_of[:_NODE_BATCH], heads_of[_NODE_BATCH:]
            ctes, parts, params = [], [], []
            for keys, cte, part in (
                (ids, "q(c, rid)", _LOGGED), (chunk, "k(c, t, r)", _ROUND_SLOTS),
                (pairs, "h(c, t)", _TABLE_HEADS),
            ):  # fmt: skip
                if keys:
                    marks = "(" + ",".join("?" * len(keys[0])) + ")"
                    ctes.append(f"{cte} AS (VALUES {','.join([marks] * len(keys))})")
                    parts.append(part)
                    params += [x for key in keys for x in key]
            sql = f"WITH {', '.join(ctes)} " + " UNION ALL ".join(parts)
            rows += self._read(sql, params)
        return group_state_from_rows(rows)

    def entry_by_leaf_hash(self, leaf_hash: bytes) -> EntryRecord | None:
        rows = self._read(_SQL.entry_by_leaf_hash, (leaf_hash,))
        return entry_from_row(rows[0]) if rows else None

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
        check_limit(limit)
        where, params = entry_conditions(
            "?",
            client_id=client_id,
            table_id=table_id,
            round_id=round_id,
            session_id=session_id,
            request_id=request_id,
            since_ns=since_ns,
            until_ns=until_ns,
        )
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        params.append(limit)
        rows = self._read(_SQL.select_entries + f"{clause} ORDER BY idx LIMIT ?", params)
        return [entry_from_row(r) for r in rows]

    def table_history(
        self,
        client_id: str,
        table_id: str,
        *,
        first_seq: int = 1,
        last_seq: int | None = None,
        limit: int = 1000,
    ) -> list[EntryRecord]:
        check_limit(limit)
        rows = self._read(
            _SQL.table_history,
            (client_id, table_id, first_seq, _MAX_INT64 if last_seq is None else last_seq, limit),
        )
        return [entry_from_row(r) for r in rows]

    def nodes(self, coords: Iterable[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        wanted = list(dict.fromkeys(coords))
        found: dict[tuple[int, int], bytes] = {}
        for start in range(0, len(wanted), _NODE_BATCH):
            chunk = wanted[start : start + _NODE_BATCH]
            values = ",".join("(?,?)" for _ in chunk)
            params = [x for coord in chunk for x in coord]
            # A join from the coordinates, so that each is one primary-key search: SQLite
            # plans "(level, idx) IN (VALUES ...)" as a scan of the whole nodes table.
            rows = self._read(
                f"SELECT n.level, n.idx, n.hash FROM (VALUES {values}) AS v "  # noqa: S608
                "JOIN nodes AS n ON n.level = v.column1 AND n.idx = v.column2",
                params,
            )
            for level, idx, value in rows:
                found[(level, idx)] = bytes(value)
        return found

    def map_rows(self) -> list[MapRow]:
        return map_rows_from(self._read(_SQL.map_rows))

    def map_heads_at(self, size: int) -> list[MapRow]:
        return map_rows_from(self._read(_SQL.map_heads_at, (size, size, size)))

    def latest_checkpoint(self) -> CheckpointRecord | None:
        rows = self._read(_SQL.latest_checkpoint)
        return checkpoint_from_row(rows[0]) if rows else None

    def checkpoints(
        self,
        *,
        min_size: int | None = None,
        max_size: int | None = None,
        since_ns: int | None = None,
        until_ns: int | None = None,
    ) -> list[CheckpointRecord]:
        where, params = checkpoint_conditions(
            "?", min_size=min_size, max_size=max_size, since_ns=since_ns, until_ns=until_ns
        )
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = self._read(
            f"SELECT size, timestamp_ns, note FROM checkpoints {clause} {CHECKPOINT_ORDER}",  # noqa: S608
            params,
        )
        return [checkpoint_from_row(r) for r in rows]

    def get_meta(self, key: str) -> bytes | None:
        rows = self._read(_SQL.get_meta, (key,))
        return bytes(rows[0][0]) if rows else None

    def cosignatures(
        self, *, min_size: int | None = None, max_size: int | None = None
    ) -> list[CosignatureRecord]:
        rows = self._read(
            _SQL.cosignatures,
            (0 if min_size is None else min_size, 2**63 - 1 if max_size is None else max_size),
        )
        return [cosignature_from_row(r) for r in rows]

    def latest_cosignatures(self) -> list[CosignatureRecord]:
        rows = self._read(_SQL.latest_cosignatures)
        return first_per_witness(cosignature_from_row(r) for r in rows)

    def close(self) -> None:
        with self._write_lock, self._readers_lock:
            if self._closed:
                return
            self._closed = True
            for conn in [self._writer, *self._idle_readers]:
                conn.close()
            self._idle_readers.clear()
