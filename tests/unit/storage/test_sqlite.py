"""SQLite driver specifics: durability settings, schema and version refusal, indexes, and a
transaction interrupted in the middle of a batch."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from rng_service.errors import InvalidArgument, StorageUnavailable
from rng_service.storage import (
    CheckpointRecord,
    CosignatureRecord,
    SchemaVersionMismatch,
    SequenceConflict,
)
from rng_service.storage.base import MapRow, SlotRecord, TableHead, entry_to_row
from rng_service.storage.sqlite import MIGRATIONS, SCHEMA_VERSION, SqliteStorage
from tests.unit.storage.drivers import leaf_nodes, make_entry


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "log.sqlite3"


def _open(path: Path) -> SqliteStorage:
    return SqliteStorage(path, busy_timeout_ms=50)


def test_wal_and_full_sync(db_path: Path) -> None:
    store = _open(db_path)
    try:
        raw = sqlite3.connect(db_path)
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        raw.close()
        # synchronous is per connection: FULL (2) on the writer that commits appends.
        assert store._writer.execute("PRAGMA synchronous").fetchone()[0] == 2
    finally:
        store.close()


def test_schema_version_and_indexes(db_path: Path) -> None:
    _open(db_path).close()
    raw = sqlite3.connect(db_path)
    try:
        version = raw.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        assert version == str(SCHEMA_VERSION).encode()
        index_columns = {
            name: [r[2] for r in raw.execute(f"PRAGMA index_info('{name}')")]
            for (name,) in raw.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
            if not name.startswith("sqlite_autoindex")
        }
        assert index_columns["entries_request"] == ["client_id", "request_id"]
        unique = {r[1]: r[2] for r in raw.execute("PRAGMA index_list('entries')")}
        assert unique["entries_request"] == 1
        for column in ("leaf_hash", "table_id", "round_id", "session_id", "timestamp_ns"):
            assert [column] in index_columns.values(), column
        assert index_columns["entries_slot"] == ["client_id", "table_id", "round_id", "slot"]
        assert index_columns["entries_table_seq"] == ["client_id", "table_id", "table_seq"]
        assert unique["entries_slot"] == unique["entries_table_seq"] == 1
        pk = [
            r[1]
            for r in sorted(raw.execute("PRAGMA table_info('nodes')"), key=lambda r: r[5])
            if r[5]
        ]
        assert pk == ["level", "idx"]
    finally:
        raw.close()


def test_meta_reports_schema_version(db_path: Path) -> None:
    store = _open(db_path)
    try:
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION).encode()
    finally:
        store.close()


def test_refuses_a_newer_schema_version(db_path: Path) -> None:
    store = _open(db_path)
    store.append([make_entry(0)], [])
    store.close()
    raw = sqlite3.connect(db_path)
    newer = str(SCHEMA_VERSION + 1)
    raw.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (newer.encode(),))
    raw.commit()
    raw.close()
    pattern = rf"schema version {newer}.*version {SCHEMA_VERSION} only"
    with pytest.raises(SchemaVersionMismatch, match=pattern):
        _open(db_path)
    with pytest.raises(SchemaVersionMismatch, match=pattern):
        SqliteStorage(db_path, busy_timeout_ms=50, migrate=True)  # never "migrated" downwards


_V1_COLUMNS = (
    "idx, data, leaf_hash, client_id, request_id, request_digest, kind, table_id, round_id, "
    "session_id, timestamp_ns, commit_size"
)


def _older_database(path: Path, version: int, n: int) -> list[tuple[object, ...]]:
    """A database as the release of schema ``version`` (1, or 2: entry format 2) left it, with
    ``n`` entries, two per round, kinds alternating: the steps ``MIGRATIONS[1..version]`` (never
    edited once released), its version in ``meta``, and rows with the columns of that schema
    (schema 2: each entry's slot and table_seq too). Returns the rows."""
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("BEGIN")
    for step in range(1, version + 1):
        for statement in MIGRATIONS[step].split(";"):
            if statement.strip():
                raw.execute(statement)
    raw.execute(
        "INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (str(version).encode(),)
    )
    columns = _V1_COLUMNS + (", slot, table_seq" if version >= 2 else "")
    rows = []
    for i in range(n):
        e = make_entry(i, round_id=f"R{i // 2}", kind=("roulette_spin", "dice_roll")[i % 2])
        row = entry_to_row(e)[: len(columns.split(","))]
        marks = ",".join("?" * len(row))
        raw.execute(f"INSERT INTO entries ({columns}) VALUES ({marks})", row)
        rows.append(row)
    raw.execute("COMMIT")
    raw.close()
    return rows


def _tables(path: Path) -> set[str]:
    raw = sqlite3.connect(path)
    try:
        return {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        raw.close()


@pytest.mark.parametrize("version", [1, 2])
def test_an_older_database_is_refused_unless_migrated(db_path: Path, version: int) -> None:
    _older_database(db_path, version, 4)
    with pytest.raises(SchemaVersionMismatch, match=rf"schema version {version};.*migrate-store"):
        _open(db_path)
    # A read-only open (check-store, export) never migrates, even when asked to.
    with pytest.raises(SchemaVersionMismatch, match=rf"schema version {version};"):
        SqliteStorage(db_path, read_only=True, migrate=True)
    raw = sqlite3.connect(db_path)
    assert raw.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
        str(version).encode(),
    )
    raw.close()
    assert "cosignatures" not in _tables(db_path)


def test_migration_keeps_schema_1_rows_without_slots(db_path: Path) -> None:
    rows = _older_database(db_path, 1, 6)
    store = SqliteStorage(db_path, busy_timeout_ms=50, migrate=True)
    try:
        assert store.migrated_from == 1
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION).encode()
        old = store.entries(0, 6)
        assert [(e.index, e.data, e.kind, e.slot, e.table_seq) for e in old] == [
            (r[0], r[1], r[6], None, None) for r in rows
        ]
        c = "table-client-1"
        # Schema-1 rows are in their rounds, without a slot (the sequencer reads their kind).
        assert store.round_slots([(c, "T1", "R1")]) == [
            SlotRecord(c, "T1", "R1", 2, None),
            SlotRecord(c, "T1", "R1", 3, None),
        ]
        assert store.table_heads([(c, "T1")]) == {}  # chains start at the first new entry
        new = [make_entry(6, round_id="R1", slot="spin", table_seq=1)]
        store.append(new, leaf_nodes(new))
        assert [r.slot for r in store.round_slots([(c, "T1", "R1")])] == [None, None, "spin"]
        assert store.table_heads([(c, "T1")]) == {(c, "T1"): TableHead(index=6, table_seq=1)}
        bad = [make_entry(7, round_id="R1", slot="spin", table_seq=2)]
        with pytest.raises(SequenceConflict):
            store.append(bad, leaf_nodes(bad))
        assert store.cosignatures() == []  # 1 -> 2 -> 3 in the one open
    finally:
        store.close()
    again = _open(db_path)  # migrated once: opens without migrate from now on
    try:
        assert again.migrated_from is None
        assert again.tree_size() == 7
    finally:
        again.close()


def test_migrating_a_schema_2_database_adds_the_cosignature_table(db_path: Path) -> None:
    rows = _older_database(db_path, 2, 4)
    store = SqliteStorage(db_path, busy_timeout_ms=50, migrate=True)
    try:
        assert store.migrated_from == 2
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION).encode()
        assert [entry_to_row(e) for e in store.entries(0, 4)] == rows  # slots and chains kept
        c = "table-client-1"
        assert store.table_heads([(c, "T1")]) == {(c, "T1"): TableHead(index=3, table_seq=4)}
        assert store.cosignatures() == []
        line = CosignatureRecord(4, b"\x01" * 32, "w1", 7, 100, b"-- w1 AAAA\n", 5)
        store.add_cosignatures([line])
        assert store.cosignatures() == [line]
        assert store.latest_cosignatures() == [line]
    finally:
        store.close()
    again = _open(db_path)  # now the current version: opens without migrating
    try:
        assert again.migrated_from is None
        assert again.cosignatures() == [line]
    finally:
        again.close()


def test_migration_builds_the_table_map_from_the_chains(db_path: Path) -> None:
    # Schema 2 rows: two chains, T1 (entries 0, 2, 3) and T2 (1); schema 1 rows are in none.
    _older_database(db_path, 2, 0)
    raw = sqlite3.connect(db_path, isolation_level=None)
    columns = _V1_COLUMNS + ", slot, table_seq"
    for e in (
        make_entry(0, table_seq=1), make_entry(1, table_id="T2", table_seq=1),
        make_entry(2, table_seq=2), make_entry(3, table_seq=3),
    ):  # fmt: skip
        raw.execute(f"INSERT INTO entries ({columns}) VALUES ({','.join('?' * 14)})",
                    entry_to_row(e))  # fmt: skip
    raw.close()
    store = SqliteStorage(db_path, busy_timeout_ms=50, migrate=True)
    try:
        c = "table-client-1"
        assert store.map_rows() == [MapRow(c, "T1", 3, 3), MapRow(c, "T2", 1, 1)]
    finally:
        store.close()
    _older_database(db_path.with_name("v1.sqlite3"), 1, 4)
    store = SqliteStorage(db_path.with_name("v1.sqlite3"), busy_timeout_ms=50, migrate=True)
    try:
        assert store.map_rows() == []  # format 1 entries are in no chain
    finally:
        store.close()


def test_a_new_database_is_not_migrated(db_path: Path) -> None:
    store = _open(db_path)
    try:
        assert store.migrated_from is None
        assert store.cosignatures() == []
    finally:
        store.close()


def test_refuses_foreign_database(db_path: Path) -> None:
    raw = sqlite3.connect(db_path)
    raw.execute("CREATE TABLE something (x)")
    raw.commit()
    raw.close()
    with pytest.raises(SchemaVersionMismatch, match="not an rng-service log"):
        _open(db_path)


def test_not_a_database(db_path: Path) -> None:
    db_path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StorageUnavailable, match="cannot open SQLite log"):
        _open(db_path)


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(StorageUnavailable, match="cannot open SQLite log"):
        _open(tmp_path / "no" / "such" / "dir" / "log.sqlite3")


def test_negative_busy_timeout_rejected(db_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="busy_timeout_ms"):
        SqliteStorage(db_path, busy_timeout_ms=-1)


def test_interrupted_batch_is_rolled_back(db_path: Path) -> None:
    store = _open(db_path)
    try:
        first = [make_entry(i) for i in range(3)]
        store.append(first, leaf_nodes(first))
        batch = [make_entry(i) for i in range(3, 200)]
        cp = CheckpointRecord(size=200, timestamp_ns=1, note=b"n\n")
        # Abort the statement after some virtual-machine steps: part of the batch is written
        # inside the transaction when SQLite gives up.
        calls = 0

        def interrupt() -> int:
            nonlocal calls
            calls += 1
            return 1 if calls > 50 else 0

        store._writer.set_progress_handler(interrupt, 100)
        with pytest.raises(StorageUnavailable, match="rolled back"):
            store.append(batch, leaf_nodes(batch), cp)
        store._writer.set_progress_handler(None, 0)
        assert calls > 50
        assert store.tree_size() == 3
        assert store.nodes([(0, 3), (0, 150)]) == {}
        assert store.latest_checkpoint() is None
        store.append(batch, leaf_nodes(batch), cp)
        assert store.tree_size() == 200
    finally:
        store.close()


def test_data_survives_reopen_byte_for_byte(db_path: Path) -> None:
    store = _open(db_path)
    entry = make_entry(0, data=bytes(range(256)) * 3)
    store.append([entry], leaf_nodes([entry]))
    store.close()
    store = _open(db_path)
    try:
        assert store.entries(0, 1) == [entry]
    finally:
        store.close()


def test_read_only_reads_beside_a_writer_and_writes_nothing(db_path: Path) -> None:
    writer = _open(db_path)
    reader = SqliteStorage(db_path, read_only=True, busy_timeout_ms=50)
    try:
        writer.append([make_entry(0)], leaf_nodes([make_entry(0)]))
        assert reader.tree_size() == 1  # a WAL reader sees what the writer committed
        with pytest.raises(StorageUnavailable, match="readonly"):
            reader.add_checkpoint(CheckpointRecord(1, 1, b"note"))
        with pytest.raises(StorageUnavailable):
            reader.set_meta("k", b"v")
        writer.append([make_entry(1)], leaf_nodes([make_entry(1)]))  # the reader never blocks it
        assert [e.index for e in reader.entries(0, 5)] == [0, 1]
        assert reader.checkpoints() == []
    finally:
        reader.close()
        writer.close()


def test_read_only_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "missing.sqlite3"
    with pytest.raises(StorageUnavailable, match="cannot open"):
        SqliteStorage(missing, read_only=True)
    assert not missing.exists()
    empty = tmp_path / "empty.sqlite3"
    sqlite3.connect(empty).close()
    with pytest.raises(SchemaVersionMismatch, match="not an rng-service log"):
        SqliteStorage(empty, read_only=True)
