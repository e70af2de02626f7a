"""Storage drivers under test and record builders. The conformance suite runs once per entry of
:data:`DRIVERS`.

The PostgreSQL driver (marked ``postgres``) opens a database of the session's throwaway cluster
(``tests/postgres_cluster.py``), one per test directory, dropped after the test; its
``failing_commits`` is another session holding an exclusive lock on the log tables, so that the
append times out on its lock (``lock_timeout``) and fails.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from rng_service.storage.base import EntryRecord, LogStorage, NodeRecord
from rng_service.storage.memory import MemoryStorage
from rng_service.storage.postgres import PostgresStorage
from rng_service.storage.sqlite import SqliteStorage
from tests import postgres_cluster

FailingCommits = Callable[[LogStorage, Path], contextlib.AbstractContextManager[None]]


@dataclass(frozen=True)
class Driver:
    name: str
    open: Callable[[Path], LogStorage]
    """Opens the store kept under the given directory (persistent drivers reopen its data)."""
    persistent: bool
    failing_commits: FailingCommits
    """Context in which every write of the store fails at the storage level."""
    marks: tuple[pytest.MarkDecorator, ...] = ()
    needs_postgres: bool = False
    """Its tests need the ``postgres_cluster`` session fixture."""
    cleanup: Callable[[Path], None] = lambda _: None
    """Removes what ``open`` made for the directory, after the test."""


@contextlib.contextmanager
def _memory_failing(store: LogStorage, _: Path) -> Iterator[None]:
    assert isinstance(store, MemoryStorage)
    store.fail_next_append("test: disk full")
    yield


def _open_sqlite(directory: Path) -> LogStorage:
    return SqliteStorage(directory / "log.sqlite3", busy_timeout_ms=50)


@contextlib.contextmanager
def _sqlite_failing(_: LogStorage, directory: Path) -> Iterator[None]:
    # Another connection holding the write lock: the store's transaction cannot start or commit.
    other = sqlite3.connect(directory / "log.sqlite3", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


def _open_postgres(directory: Path) -> LogStorage:
    cluster = postgres_cluster.current()
    return PostgresStorage(cluster.dsn(cluster.database_for(directory)), lock_timeout_ms=50)


@contextlib.contextmanager
def _postgres_failing(_: LogStorage, directory: Path) -> Iterator[None]:
    cluster = postgres_cluster.current()
    with psycopg.connect(cluster.dsn(cluster.database_for(directory))) as other:
        other.execute("LOCK TABLE log_head, entries, nodes, checkpoints IN EXCLUSIVE MODE")
        try:
            yield
        finally:
            other.rollback()


def _drop_postgres(directory: Path) -> None:
    postgres_cluster.current().drop_database_for(directory)


DRIVERS = [
    Driver("memory", lambda _: MemoryStorage(), persistent=False, failing_commits=_memory_failing),
    Driver("sqlite", _open_sqlite, persistent=True, failing_commits=_sqlite_failing),
    Driver(
        "postgres",
        _open_postgres,
        persistent=True,
        failing_commits=_postgres_failing,
        marks=(pytest.mark.postgres,),
        needs_postgres=True,
        cleanup=_drop_postgres,
    ),
]


def make_entry(
    index: int,
    *,
    client_id: str = "table-client-1",
    request_id: str | None = None,
    kind: str = "roulette",
    table_id: str = "T1",
    round_id: str | None = None,
    session_id: str = "S1",
    timestamp_ns: int | None = None,
    data: bytes | None = None,
    slot: str | None = None,
    table_seq: int | None = None,
) -> EntryRecord:
    """A realistic entry (about 600 bytes of canonical data) for log position ``index``; its
    slot (``s<index>``) and table sequence number (``index + 1``) unique unless given."""
    body = data if data is not None else (b'{"i":%d,"outcome":' % index) + b"7" * 580 + b"}"
    return EntryRecord(
        index=index,
        data=body,
        leaf_hash=hashlib.sha256(b"\x00" + body).digest(),
        client_id=client_id,
        request_id=request_id if request_id is not None else f"req-{index}",
        request_digest=hashlib.sha256(f"params-{index}".encode()).digest(),
        kind=kind,
        table_id=table_id,
        round_id=round_id if round_id is not None else f"R{index // 10}",
        session_id=session_id,
        timestamp_ns=timestamp_ns
        if timestamp_ns is not None
        else 1_767_225_600_000_000_000 + index,
        commit_size=index + 1,
        slot=slot if slot is not None else f"s{index}",
        table_seq=table_seq if table_seq is not None else index + 1,
    )


def leaf_nodes(entries: list[EntryRecord]) -> list[NodeRecord]:
    return [NodeRecord(0, e.index, e.leaf_hash) for e in entries]
